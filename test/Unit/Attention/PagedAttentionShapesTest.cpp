//===- PagedAttentionShapesTest.cpp - Kernel edge cases ---------*- C++ -*-===//
//
// The cases where the kernels switch paths or cut their loops: prefill tiles of 16 queries,
// keys read 16 positions at a time (which may span cache blocks), the query heads of a KV
// group split into register-sized sets, head sizes the AVX-512 kernels leave to the portable
// one, and softmax inputs with a wide range. Every case runs in float32 and bfloat16 against
// the LibTorch reference.
//
//===----------------------------------------------------------------------===//

#include "AttentionReference.h"

namespace {

using namespace nnsc::attention_test;

const torch::ScalarType kDtypes[] = {torch::kFloat32, torch::kBFloat16};

TEST(PagedAttentionShapes, PrefillAcrossTileAndBlockBoundaries) {
  std::mt19937 rng(2);
  torch::manual_seed(2);
  for (torch::ScalarType dtype : kDtypes)
    for (const Shape &s : {Shape{9, 3, 64, 16}, Shape{8, 2, 64, 16}}) {
      // One query up to three tiles, from the start of the sequence.
      checkPrefill(rng, s, {0, 0, 0, 0, 0, 0, 0, 0}, {1, 15, 16, 17, 31, 32, 33, 48}, dtype);
      // Chunked prefill: the chunk attends to a cached prefix of one to many blocks.
      checkPrefill(rng, s, {15, 16, 17, 100, 250}, {17, 16, 40, 1, 33}, dtype);
    }
}

TEST(PagedAttentionShapes, DecodeAcrossChunkAndBlockBoundaries) {
  std::mt19937 rng(3);
  torch::manual_seed(3);
  for (torch::ScalarType dtype : kDtypes)
    for (const Shape &s : {Shape{9, 3, 64, 16}, Shape{8, 2, 64, 16}})
      checkDecode(rng, s, {0, 14, 15, 16, 17, 31, 32, 1000}, dtype);
}

TEST(PagedAttentionShapes, KeyChunksSpanningBlocks) {
  std::mt19937 rng(4);
  torch::manual_seed(4);
  for (torch::ScalarType dtype : kDtypes)
    for (const Shape &s : {Shape{9, 3, 64, 5}, Shape{9, 3, 64, 24}, Shape{4, 2, 32, 1}}) {
      checkPrefill(rng, s, {0, 40, 7}, {37, 30, 1}, dtype);
      checkDecode(rng, s, {3, 100, 47}, dtype);
    }
}

TEST(PagedAttentionShapes, GroupsAndHeadSizes) {
  std::mt19937 rng(5);
  torch::manual_seed(5);
  // Groups of 16 and 5 heads (split into sets that fit the registers), one head per group,
  // head_dim from one vector (16) to sixteen (256).
  for (torch::ScalarType dtype : kDtypes)
    for (const Shape &s :
         {Shape{16, 1, 64, 16}, Shape{10, 2, 128, 16}, Shape{2, 1, 256, 16}, Shape{3, 3, 16, 16}}) {
      checkPrefill(rng, s, {0, 20}, {35, 9}, dtype);
      checkDecode(rng, s, {0, 40, 77}, dtype);
    }
}

TEST(PagedAttentionShapes, HeadSizesLeftToThePortableKernel) {
  std::mt19937 rng(6);
  torch::manual_seed(6);
  for (torch::ScalarType dtype : kDtypes)
    for (const Shape &s : {Shape{4, 2, 24, 16}, Shape{2, 1, 272, 8}}) {
      checkPrefill(rng, s, {0, 20}, {35, 9}, dtype);
      checkDecode(rng, s, {0, 40, 77}, dtype);
    }
}

TEST(PagedAttentionShapes, WideScoreRange) {
  std::mt19937 rng(7);
  torch::manual_seed(7);
  // Scores spread over hundreds: most probabilities underflow to 0 and the running maximum
  // jumps between key chunks.
  for (torch::ScalarType dtype : kDtypes) {
    checkPrefill(rng, Shape{9, 3, 64, 16}, {0, 30}, {50, 20}, dtype, 20.0);
    checkDecode(rng, Shape{9, 3, 64, 16}, {0, 60, 200}, dtype, 20.0);
  }
}

} // namespace
