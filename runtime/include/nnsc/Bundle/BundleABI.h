/*===- BundleABI.h - the contract between nnsc bundles and the runtime ---*- C -*-===//
 *
 * A bundle is a shared object produced by `nnsc -emit=bundle`. It exports one function,
 * `nnsc_bundle_query`, returning a static, immutable description: the manifest (what the
 * bundle was built for, its traces, params and saves) and, per trace, one kernel per site it
 * touches. The runtime calls a site's kernel synchronously when the forward pass reaches that
 * site, once per batch, with every group of tokens bound to that trace.
 *
 * This header is plain C99, owned by the runtime, and is the only thing the compiler and the
 * runtime share. See docs/BundleABI.md for the versioning policy.
 *
 *===----------------------------------------------------------------------===*/

#ifndef NNSC_BUNDLE_BUNDLEABI_H
#define NNSC_BUNDLE_BUNDLEABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* C names, for C: snake_case is this header's style. */
/* NOLINTBEGIN(readability-identifier-naming) */

/* Bumped on any change to the layout or meaning of the structures below. The runtime refuses
 * a bundle whose abi_version differs from its own. */
#define NNSC_BUNDLE_ABI_VERSION 5u

#define NNSC_BUNDLE_QUERY_SYMBOL "nnsc_bundle_query"

typedef enum nnsc_dtype {
  NNSC_DTYPE_F32 = 0,
  NNSC_DTYPE_BF16 = 1,
  NNSC_DTYPE_F16 = 2,
  NNSC_DTYPE_I64 = 3,
  NNSC_DTYPE_BOOL = 4,
} nnsc_dtype;

/* A strided view. `strides` are in elements. Shape entries in descriptors (not in views) may be
 * NNSC_DIM_TOKENS, the per-sequence token count known only at run time. */
#define NNSC_DIM_TOKENS (-1)
#define NNSC_MAX_RANK 4

typedef struct nnsc_tensor {
  void *data;
  nnsc_dtype dtype;
  int32_t rank;
  int64_t shape[NNSC_MAX_RANK];
  int64_t strides[NNSC_MAX_RANK];
} nnsc_tensor;

/* ---- Manifest -------------------------------------------------------------------------- */

typedef struct nnsc_param_desc {
  const char *name;
  nnsc_dtype dtype;
  int32_t rank;                 /* 0 for scalars */
  int64_t shape[NNSC_MAX_RANK]; /* model dimensions already resolved */
  /* Default value, `rank`/`shape`/`dtype` as above, or NULL when the param is required. */
  const void *default_value;
} nnsc_param_desc;

/* Saved once per generation step under "NAME.<step>" rather than once under "NAME". */
#define NNSC_SAVE_PER_STEP (1u << 0)

typedef struct nnsc_save_desc {
  const char *name;
  nnsc_dtype dtype;
  int32_t rank;
  int64_t shape[NNSC_MAX_RANK]; /* may contain NNSC_DIM_TOKENS */
  uint32_t flags;
} nnsc_save_desc;

/* Sequence-level phases after the forward pass; token-level sites use NNSC_PHASE_FORWARD. */
typedef enum nnsc_phase {
  NNSC_PHASE_FORWARD = 0,
  NNSC_PHASE_LOGITS = 1,
  NNSC_PHASE_SAMPLES = 2,
  NNSC_PHASE_RESULT = 3,
} nnsc_phase;

#define NNSC_ACCESS_READ (1u << 0)
#define NNSC_ACCESS_WRITE (1u << 1)
/* The kernel may skip the module (`.skip()`). Set on the module's input site entry. For each
 * request it skips at a firing the kernel writes the module's output into the request's rows
 * and calls nnsc_runtime.skip; the runtime then fires the output site with those rows without
 * running the module for them. A request not reported (its skip sits in a step or branch not
 * taken) runs the module. */
#define NNSC_ACCESS_SKIP (1u << 2)

struct nnsc_group;
struct nnsc_runtime;

/* A site kernel. `value` is the site's flat tensor for the whole batch: [total_tokens, ...] for
 * token-level sites, [num_sequences, ...] for sequence-level ones; the kernel reads and writes
 * only the rows of its groups. Returns 0; a non-zero return is an internal error that fails
 * every request of the batch bound to this bundle (user-level errors go through
 * nnsc_runtime.report_error and affect one request). */
typedef int32_t (*nnsc_site_kernel)(nnsc_tensor *value, const struct nnsc_group *groups,
                                    int32_t num_groups, const struct nnsc_runtime *rt);

typedef struct nnsc_site_entry {
  int32_t site;          /* index in the architecture schema's firing order */
  const char *site_path; /* "model.layers.8.output": checked against the schema at load */
  nnsc_phase phase;
  uint32_t access; /* NNSC_ACCESS_* */
  nnsc_site_kernel kernel;
} nnsc_site_entry;

/* The trace reads token positions of the prompt (prefix-cache hits would skip them: the
 * runtime computes the whole prefill for such requests). */
#define NNSC_TRACE_READS_PROMPT (1u << 0)
/* The trace writes prompt positions: the KV cache depends on the bundle and its params, so
 * the runtime salts the prefix-cache hash with them. */
#define NNSC_TRACE_WRITES_PROMPT (1u << 1)
/* The trace may end the forward pass early (stop()). */
#define NNSC_TRACE_STOPS (1u << 2)

typedef struct nnsc_trace_desc {
  const char *name;    /* "" for the unnamed trace */
  int32_t num_invokes; /* prompts per request; 0: the trace applies to each prompt alone */
  const char *const *invoke_names;
  uint32_t flags;      /* NNSC_TRACE_* */
  int64_t frame_bytes; /* per-request scratch holding values that cross sites and invokes */
  /* Byte offsets in the frame of the pointers to the heap copies (malloc) that host kernels
   * keep for values whose shape is known only at run time, ascending and 8-aligned. A kernel
   * frees a slot's previous copy when it writes the slot again; the runtime frees what is left
   * (each non-null pointer) when it releases or restarts the request. */
  int32_t num_frame_heap_slots;
  const int64_t *frame_heap_slots;
  int32_t num_params;
  const nnsc_param_desc *params;
  int32_t num_saves;
  const nnsc_save_desc *saves;
  int32_t num_sites; /* sorted by `site` */
  const nnsc_site_entry *sites;
} nnsc_trace_desc;

/* ---- CUDA code (--target=cuda; docs/BundleABI.md, "CUDA execution") ---------------------- */

/* The device copy of one host kernel: a PTX `.entry` with the host kernel's four arguments,
 * except that every pointer is a device address and `rt` points to an nnsc_cuda_status. It is
 * launched with one thread. Device code cannot call the nnsc_runtime callbacks: it records them
 * as events in the status, which the host replays in order after the launch. */
typedef struct nnsc_cuda_kernel {
  nnsc_site_kernel host; /* the host kernel it copies (nnsc_site_entry.kernel) */
  const char *entry;     /* its entry name in the PTX */
  int64_t scratch_bytes; /* device memory kept across the launches of one site call */
  int32_t num_calls;     /* call_module sites: the kernel suspends at each one */
} nnsc_cuda_kernel;

typedef struct nnsc_cuda_code {
  const char *ptx;  /* NUL-terminated */
  const char *chip; /* "sm_90" */
  int32_t num_kernels;
  const nnsc_cuda_kernel *kernels;
  int32_t num_messages;
  const char *const *messages; /* report_error texts, by NNSC_CUDA_EVENT_ERROR index */
} nnsc_cuda_code;

typedef enum nnsc_cuda_event_kind {
  NNSC_CUDA_EVENT_ERROR = 0,  /* report_error(request, messages[index], error_args...) */
  NNSC_CUDA_EVENT_SAVE = 1,   /* save(request, index, step, value); value.data in the sink */
  NNSC_CUDA_EVENT_STOP = 2,   /* stop(request) */
  NNSC_CUDA_EVENT_FINISH = 3, /* finish(request) */
  /* call_module(module index, value -> output): value.data in the sink, output has no data.
   * Always the last event of a launch: the kernel suspended (status.resume != 0). */
  NNSC_CUDA_EVENT_CALL_MODULE = 4,
  NNSC_CUDA_EVENT_SKIP = 5, /* skip(request) */
} nnsc_cuda_event_kind;

typedef struct nnsc_cuda_event {
  int32_t kind;  /* nnsc_cuda_event_kind */
  int32_t index; /* message, save or module index */
  void *request; /* the group's request handle (NULL for CALL_MODULE) */
  int64_t step;
  nnsc_tensor value;     /* contiguous; data NULL when the sink overflowed */
  nnsc_tensor output;    /* CALL_MODULE: dtype and shape of the module's output */
  int64_t error_args[2]; /* ERROR: report_error's arg0 and arg1 */
} nnsc_cuda_event;

/* In device memory, set up by the host before the first launch of a site call. */
typedef struct nnsc_cuda_status {
  int32_t resume;        /* 0 on the first launch; the kernel sets it to k when it suspends at
                            call site k (1-based) and clears it when resumed */
  int32_t module_status; /* call_module's result, written by the host before resuming */
  nnsc_cuda_event *events;
  int64_t event_capacity;
  int64_t num_events; /* events recorded; above event_capacity, the excess were dropped */
  char *sink;         /* save values and module inputs, packed contiguously */
  int64_t sink_bytes;
  int64_t sink_used;
  void *module_output; /* the host writes the module's output here (contiguous) before resuming */
  void *scratch;       /* nnsc_cuda_kernel.scratch_bytes, unchanged between the launches */
} nnsc_cuda_status;

typedef struct nnsc_bundle {
  uint32_t abi_version;    /* NNSC_BUNDLE_ABI_VERSION of the compiler that built it */
  const char *source_hash; /* hex SHA-256 of the .nns source */
  const char *arch;        /* "llama", "qwen2", "qwen3", "mistral" */
  uint64_t schema_hash;    /* nnsc::schema::ModelConfig::schemaHash() */
  int64_t hidden, intermediate, layers, heads, kv_heads, head_dim, vocab;
  int32_t num_traces;
  const nnsc_trace_desc *traces;
  /* The kernels' device copies when built with --target=cuda, else NULL. */
  const nnsc_cuda_code *cuda;
} nnsc_bundle;

/* ---- Invocation ------------------------------------------------------------------------- */

/* The tokens of one sequence bound to this trace, at this site, in this batch. */
typedef struct nnsc_group {
  int64_t row;               /* first row of the sequence in the site's flat tensor */
  int64_t rows;              /* its token count T (1 for sequence-level sites) */
  int64_t position;          /* position in the sequence of the first row (chunked prefill) */
  int64_t step;              /* 0 = prefill, then one per generated token */
  int32_t invoke;            /* which invoke of the trace this sequence is */
  void *frame;               /* the request's frame (frame_bytes, zeroed at request start) */
  const nnsc_tensor *params; /* the request's params, in nnsc_trace_desc.params order */
  void *request;             /* opaque: passed back to the runtime callbacks */
} nnsc_group;

typedef struct nnsc_runtime {
  void *ctx;
  /* Applies a module of the model (schema module index) to `input`, without firing hooks,
   * writing `output` (allocated by the caller with the module's output shape). 0 on success. */
  int32_t (*call_module)(void *ctx, int32_t module, const nnsc_tensor *input, nnsc_tensor *output);
  /* Fails one request with a message; its other work in this batch is skipped. `{0}` and `{1}`
   * in the message stand for the decimal values of arg0 and arg1 (numbers known only when the
   * kernel runs, such as an index and the size it must lie within); the runtime puts them in. */
  void (*report_error)(void *ctx, void *request, const char *message, int64_t arg0, int64_t arg1);
  /* Copies `value` into the request's results under save `save_index` (at `step` for
   * NNSC_SAVE_PER_STEP saves). */
  void (*save)(void *ctx, void *request, int32_t save_index, int64_t step,
               const nnsc_tensor *value);
  /* stop(): no later site of this forward pass is needed by the sequence of `request` (the
   * group's handle): the request, or in a trace with invokes that invoke's prompt alone. */
  void (*stop)(void *ctx, void *request);
  /* finish(): end the request after this step. */
  void (*finish)(void *ctx, void *request);
  /* skip(): at a module's input site (NNSC_ACCESS_SKIP), the kernel wrote the module's output
   * into the request's rows: the module does not run for them at this firing. */
  void (*skip)(void *ctx, void *request);
} nnsc_runtime;

/* The one export of a bundle. The returned pointer stays valid while the bundle is loaded. */
typedef const nnsc_bundle *(*nnsc_bundle_query_fn)(void);
const nnsc_bundle *nnsc_bundle_query(void);

/* NOLINTEND(readability-identifier-naming) */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NNSC_BUNDLE_BUNDLEABI_H */
