//===- RankLinkTest.cpp - rank 0's engine operations as bytes -------------===//
//
// What a tensor-parallel server's rank 0 sends the other ranks (RankLink.h) decodes to what was
// encoded: every sampling field, prompts per invoke, aborts in order, the step and stop flags;
// a message cut short is refused with a message, not read past its end. Programs travel too
// (their bundle bytes once, then by id): python/tests/test_tensor_parallel_serving.py runs them
// through three ranks.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Server/RankLink.h"
#include "nnsc/Runtime/Support/Error.h"

#include <gtest/gtest.h>

namespace {

using namespace nnsc;
using namespace nnsc::server;

struct Codec {
  std::map<const session::Program *, int64_t> ids;
  std::vector<std::shared_ptr<const session::Program>> sent;
  int64_t programBytes = 0;
  session::ProgramRegistry registry{nullptr, {}, 1, "/tmp"};
  std::map<int64_t, std::shared_ptr<const session::Program>> programs;

  std::string encode(const RankMessage &m) { return RankLink::encode(m, ids, sent, programBytes); }
  RankMessage decode(const std::string &bytes) {
    return RankLink::decode(bytes, registry, programs);
  }
};

RankMessage sampleMessage() {
  SamplingParams s;
  s.temperature = 0.7f;
  s.topK = 40;
  s.topP = 0.9f;
  s.seed = 1234567890123ull;
  s.maxTokens = 77;
  s.ignoreEos = true;
  s.stopTokenIds = {2, 13, 49151};
  s.logprobs = 5;
  s.batchInvariant = true;
  RankMessage m;
  m.ops.push_back({EngineOp::Kind::Admit, {{{1, 2, 3}, {4, 5}}, s, {}}, -1});
  m.ops.push_back({EngineOp::Kind::Abort, {}, 42});
  m.ops.push_back({EngineOp::Kind::Admit, {{{9}}, SamplingParams{}, {}}, -1});
  m.step = true;
  return m;
}

TEST(RankLink, AMessageDecodesToWhatWasEncoded) {
  Codec c;
  const RankMessage sent = sampleMessage();
  const RankMessage got = c.decode(c.encode(sent));
  EXPECT_TRUE(got.step);
  EXPECT_FALSE(got.stop);
  ASSERT_EQ(got.ops.size(), 3u);
  EXPECT_EQ(got.ops[1].kind, EngineOp::Kind::Abort);
  EXPECT_EQ(got.ops[1].sequence, 42);
  for (size_t i : {0u, 2u}) {
    const ForwardedRequest &a = sent.ops[i].request, &b = got.ops[i].request;
    EXPECT_EQ(got.ops[i].kind, EngineOp::Kind::Admit);
    EXPECT_EQ(b.prompts, a.prompts);
    EXPECT_EQ(b.sampling.temperature, a.sampling.temperature);
    EXPECT_EQ(b.sampling.topK, a.sampling.topK);
    EXPECT_EQ(b.sampling.topP, a.sampling.topP);
    EXPECT_EQ(b.sampling.seed, a.sampling.seed);
    EXPECT_EQ(b.sampling.maxTokens, a.sampling.maxTokens);
    EXPECT_EQ(b.sampling.ignoreEos, a.sampling.ignoreEos);
    EXPECT_EQ(b.sampling.stopTokenIds, a.sampling.stopTokenIds);
    EXPECT_EQ(b.sampling.logprobs, a.sampling.logprobs);
    EXPECT_EQ(b.sampling.batchInvariant, a.sampling.batchInvariant);
    EXPECT_FALSE(b.bound.program);
  }
  EXPECT_EQ(c.programBytes, 0);
}

TEST(RankLink, AnIdleAndAStopMessageAreShort) {
  Codec c;
  RankMessage stop;
  stop.stop = true;
  const std::string bytes = c.encode(stop);
  EXPECT_LE(bytes.size(), 16u);
  EXPECT_TRUE(c.decode(bytes).stop);
  EXPECT_TRUE(c.decode(c.encode(RankMessage{})).ops.empty());
}

TEST(RankLink, ATruncatedMessageIsRefused) {
  Codec c;
  const std::string bytes = c.encode(sampleMessage());
  for (size_t cut : {size_t(1), size_t(10), bytes.size() / 2, bytes.size() - 1}) {
    try {
      c.decode(bytes.substr(0, cut));
      ADD_FAILURE() << "decoded " << cut << " of " << bytes.size() << " bytes";
    } catch (const InvalidInput &e) {
      EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
    }
  }
  try {
    c.decode(bytes + "x");
    ADD_FAILURE() << "decoded trailing bytes";
  } catch (const InvalidInput &e) {
    EXPECT_NE(std::string(e.what()).find("trailing"), std::string::npos) << e.what();
  }
}

} // namespace
