// >>api ----------------------------------------------------------------------------------------
#ifndef TENSOR_H
#define TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TENSOR_VERSION_MAJOR 0
#define TENSOR_VERSION_MINOR 1
#define TENSOR_VERSION_PATCH 0

#ifndef TENSOR_API
#ifdef TENSOR_STATIC
#if defined(__GNUC__) || defined(__clang__)
#define TENSOR_API static __attribute__((unused)) /* a TU need not call every function */
#else
#define TENSOR_API static
#endif
#else
#define TENSOR_API extern
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16,
               TENSOR_I32, TENSOR_I64, TENSOR_U8, TENSOR_BOOL } tensor_dtype;
#define TENSOR_DTYPE_COUNT 8
typedef enum { TENSOR_CPU, TENSOR_CUDA } tensor_device;
#define TENSOR_DEVICE_COUNT 2
#define TENSOR_MAX_DIMS 8
/* tensor_embedding_bag's padding_idx for "no padding index" (PyTorch's None; a negative index in
   [-V, -1] counts from the end, as PyTorch's) */
#define TENSOR_NO_PADDING_IDX INT64_MIN

/* TENSOR_SHAPE(3, 4) expands to the two arguments `2, (const int64_t[]){3, 4}`:
   tensor_zeros(TENSOR_SHAPE(3, 4), TENSOR_F32). In C++ the array is a temporary that lives until
   the end of the full expression, which covers the call. */
#define TENSOR__NARG(...) TENSOR__NARG_(__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define TENSOR__NARG_(a1, a2, a3, a4, a5, a6, a7, a8, n, ...) n
#ifdef __cplusplus
} /* extern "C" */
template <int N> struct tensor__shape_array { int64_t v[N]; };
extern "C" {
#define TENSOR_SHAPE(...) TENSOR__NARG(__VA_ARGS__), (tensor__shape_array<TENSOR__NARG(__VA_ARGS__)>{{__VA_ARGS__}}.v)
#else
#define TENSOR_SHAPE(...) TENSOR__NARG(__VA_ARGS__), ((const int64_t[]){__VA_ARGS__})
#endif

typedef struct tensor tensor;

/* How a loss reduces its per-element losses (PyTorch's reduction='mean', 'sum', 'none'). */
typedef enum { TENSOR_REDUCTION_MEAN, TENSOR_REDUCTION_SUM, TENSOR_REDUCTION_NONE } tensor_reduction;

//@@ OPS_LIST

//@@ OPS_ENUM

/* ---- Lifetime ---- */
TENSOR_API void    tensor_free(tensor *t);          /* releases one handle, from any thread; NULL is fine */
TENSOR_API void    tensor_scope_begin(void);        /* handles this thread creates after this ... */
TENSOR_API void    tensor_scope_end(void);          /* ... are released here, unless kept */
TENSOR_API tensor *tensor_keep(tensor *t);          /* moves t out of the innermost scope; returns t (its thread's) */
TENSOR_API void    tensor_shutdown(void);           /* frees everything the library still holds, every thread's */
TENSOR_API int64_t tensor_live_handles(void);       /* handles not yet freed, all threads (leak checks) */
TENSOR_API int64_t tensor_live_bytes(void);         /* bytes of storage not yet freed, all threads (leak checks) */
TENSOR_API void    tensor_empty_cache(void);        /* gives this thread's cached free blocks back (threads keep
                                                       at most TENSOR_CACHE_LIMIT bytes together, default 1 GiB) */

/* ---- Errors ---- */
TENSOR_API const char *tensor_last_error(void);     /* NULL when no error since the last clear; per thread */
TENSOR_API void        tensor_clear_error(void);
typedef void (*tensor_error_fn)(const char *message, void *user);
TENSOR_API void        tensor_set_error_handler(tensor_error_fn fn, void *user);   /* NULL: none */

/* ---- Creation and data (the creating functions are registry ops, below) ---- */
TENSOR_API void           tensor_manual_seed(uint64_t seed);   /* same seed, same numbers, on every platform; seeds this thread */
TENSOR_API int            tensor_ndim(const tensor *t);        /* -1 for NULL */
TENSOR_API const int64_t *tensor_shape(const tensor *t);
TENSOR_API const int64_t *tensor_strides(const tensor *t);     /* in elements */
TENSOR_API int64_t        tensor_size(const tensor *t, int dim);   /* -1 and an error on a bad dim */
TENSOR_API int64_t        tensor_numel(const tensor *t);
TENSOR_API tensor_dtype   tensor_get_dtype(const tensor *t);
TENSOR_API tensor_device  tensor_get_device(const tensor *t);
TENSOR_API bool           tensor_is_contiguous(const tensor *t);
TENSOR_API bool           tensor_shares_storage(const tensor *a, const tensor *b);
TENSOR_API double         tensor_item(tensor *t);              /* one-element tensors; NaN and an error otherwise */
TENSOR_API int            tensor_copy_to(tensor *t, void *dst, size_t dst_bytes); /* row-major, any layout; 0 ok */
TENSOR_API void          *tensor_data_ptr(tensor *t);          /* CPU contiguous storage, else NULL + error */
TENSOR_API void           tensor_print(tensor *t);             /* PyTorch-like text to stdout */
TENSOR_API int            tensor_snprint(tensor *t, char *buf, size_t n); /* like snprintf: length it needs */
TENSOR_API const char    *tensor_dtype_name(tensor_dtype dtype);   /* "float32", ... */
TENSOR_API size_t         tensor_dtype_size(tensor_dtype dtype);   /* bytes per element; 0 if invalid */
TENSOR_API tensor_dtype   tensor_promote_types(tensor_dtype a, tensor_dtype b); /* torch.promote_types */

/* ---- Shape helpers that return several tensors ---- */
TENSOR_API int tensor_split(tensor *t, int64_t split_size, int dim, tensor **out, int max_out); /* views; returns count, -1 on error */
/* torch.chunk: at most `chunks` views of equal size along dim (the last smaller); returns count, -1 on error */
TENSOR_API int tensor_chunk(tensor *t, int chunks, int dim, tensor **out, int max_out);
/* torch.tensor_split with a number of sections: `sections` views, the first size % sections one longer */
TENSOR_API int tensor_tensor_split(tensor *t, int64_t sections, int dim, tensor **out, int max_out);
/* torch.tensor_split with indices: n + 1 views, t[:indices[0]], t[indices[0]:indices[1]], ..., t[indices[n-1]:] */
TENSOR_API int tensor_tensor_split_indices(tensor *t, int n, const int64_t *indices, int dim, tensor **out, int max_out);
/* torch.unbind: the size(dim) views t.select(dim, i); returns count, -1 on error */
TENSOR_API int tensor_unbind(tensor *t, int dim, tensor **out, int max_out);
/* torch.broadcast_tensors: out[i] = ts[i] expanded to the common shape (views); returns n, -1 on error */
TENSOR_API int tensor_broadcast_tensors(int n, tensor *const *ts, tensor **out);
/* torch.meshgrid of n 0-D or 1-D tensors, indexing "ij" (NULL) or "xy"; out[i] are expanded views; returns n, -1 on error */
TENSOR_API int tensor_meshgrid(int n, tensor *const *ts, const char *indexing, tensor **out);

/* ---- Comparisons answering with a C bool (>>elementwise): false, with the error set, for a NULL
   or bad input (tensor_last_error tells a failure from a plain false) ---- */
/* torch.allclose: every element of tensor_isclose(a, b, rtol, atol, equal_nan) (PyTorch's defaults 1e-5, 1e-8, false) */
TENSOR_API bool tensor_allclose(tensor *a, tensor *b, double rtol, double atol, bool equal_nan);
/* torch.equal: a and b have the same shape and equal values (any dtypes, compared promoted; NaN unequal) */
TENSOR_API bool tensor_equal(tensor *a, tensor *b);

/* ---- torch.special's other names (>>special): each is the op it names, as in PyTorch ---- */
TENSOR_API tensor *tensor_special_expit(tensor *a);                 /* sigmoid */
TENSOR_API tensor *tensor_special_exp2(tensor *a);
TENSOR_API tensor *tensor_special_expm1(tensor *a);
TENSOR_API tensor *tensor_special_log1p(tensor *a);
TENSOR_API tensor *tensor_special_erf(tensor *a);
TENSOR_API tensor *tensor_special_erfc(tensor *a);
TENSOR_API tensor *tensor_special_erfinv(tensor *a);
TENSOR_API tensor *tensor_special_gammaln(tensor *a);               /* lgamma */
TENSOR_API tensor *tensor_special_digamma(tensor *a);
TENSOR_API tensor *tensor_special_psi(tensor *a);                   /* digamma */
TENSOR_API tensor *tensor_special_polygamma(int64_t n, tensor *a);
TENSOR_API tensor *tensor_special_sinc(tensor *a);
TENSOR_API tensor *tensor_special_round(tensor *a);
TENSOR_API tensor *tensor_special_i0(tensor *a);
TENSOR_API tensor *tensor_special_logit(tensor *a, double eps);     /* eps NaN: None */
TENSOR_API tensor *tensor_special_xlogy(tensor *a, tensor *b);
TENSOR_API tensor *tensor_special_xlog1py(tensor *a, tensor *b);
TENSOR_API tensor *tensor_special_softmax(tensor *t, int dim);
TENSOR_API tensor *tensor_special_log_softmax(tensor *t, int dim);
TENSOR_API tensor *tensor_special_logsumexp(tensor *t, int dim, bool keepdim);
/* sum_{j<p} lgamma(a - j/2) + p (p - 1)/4 log(pi), every element of a > (p - 1)/2, p >= 1 */
TENSOR_API tensor *tensor_special_multigammaln(tensor *a, int64_t p);
TENSOR_API tensor *tensor_mvlgamma(tensor *a, int64_t p);               /* torch.mvlgamma: special_multigammaln */

/* ---- The op registry at run time ---- */
TENSOR_API const char *tensor_op_name(tensor_op op);          /* "add", ...; NULL if out of range */
TENSOR_API bool        tensor_op_differentiable(tensor_op op);

/* ---- Autograd ---- */
TENSOR_API tensor *tensor_set_requires_grad(tensor *t, bool on);   /* returns t; floating leaves only */
TENSOR_API bool    tensor_requires_grad(const tensor *t);
TENSOR_API int     tensor_backward(tensor *loss);                   /* loss must have one element; 0 ok */
TENSOR_API int     tensor_backward_with(tensor *out, tensor *grad_out); /* d(sum(out * grad_out)) */
TENSOR_API tensor *tensor_grad(tensor *t);                          /* accumulated .grad, borrowed; NULL if none */
TENSOR_API void    tensor_zero_grad(tensor *t);                     /* drops .grad (PyTorch's set_to_none) */
TENSOR_API tensor *tensor_detach(tensor *t);                        /* a view outside the graph */
TENSOR_API bool    tensor_set_grad_enabled(bool on);                /* returns the previous setting; per thread */
TENSOR_API int     tensor_autograd_grad(int n_out, tensor *const *outputs, tensor *const *grad_outputs,
                                        int n_in, tensor *const *inputs, tensor **grads_out, bool create_graph);
/* A leaf's hook, run in backward once its gradient is final (all of it summed): grad is the new
   .grad, borrowed for the call (torch.Tensor.register_post_accumulate_grad_hook; tensor_ddp uses it) */
typedef void (*tensor_grad_hook)(tensor *grad, void *user);
TENSOR_API int     tensor_register_post_accumulate_grad_hook(tensor *leaf, tensor_grad_hook fn, void *user); /* 0 ok */
TENSOR_API int     tensor_remove_post_accumulate_grad_hook(tensor *leaf, tensor_grad_hook fn, void *user);   /* 0 ok */

/* ---- Initialization (in place, PyTorch's formulas; return t) ---- */
TENSOR_API tensor *tensor_uniform_(tensor *t, double lo, double hi);
TENSOR_API tensor *tensor_normal_(tensor *t, double mean, double std);
TENSOR_API tensor *tensor_kaiming_uniform_(tensor *t, double a);    /* torch.nn.init.kaiming_uniform_, fan_in, leaky_relu */
TENSOR_API tensor *tensor_xavier_uniform_(tensor *t, double gain);  /* torch.nn.init.xavier_uniform_ */

/* ---- Optimizers (torch.optim's update rules) ---- */
typedef struct tensor_optim tensor_optim;
TENSOR_API tensor_optim *tensor_optim_sgd(int n, tensor *const *params, double lr, double momentum,
                                          double weight_decay, bool nesterov);
TENSOR_API tensor_optim *tensor_optim_adam(int n, tensor *const *params, double lr, double beta1, double beta2,
                                           double eps, double weight_decay);   /* Adam (L2 weight decay) */
TENSOR_API tensor_optim *tensor_optim_adamw(int n, tensor *const *params, double lr, double beta1, double beta2,
                                            double eps, double weight_decay);  /* decoupled decay */
TENSOR_API int     tensor_optim_step(tensor_optim *o);
TENSOR_API void    tensor_optim_zero_grad(tensor_optim *o);
TENSOR_API void    tensor_optim_set_lr(tensor_optim *o, double lr);          /* every group's */
/* Parameter groups (torch.optim's param_groups): group 0 is the constructor's parameters, with its
   lr and weight decay; a group added has its own (the rest of the rule is shared) */
TENSOR_API int     tensor_optim_add_group(tensor_optim *o, int n, tensor *const *params, double lr,
                                          double weight_decay);             /* the group's index, or -1 */
TENSOR_API void    tensor_optim_set_group_lr(tensor_optim *o, int group, double lr);
/* Learning-rate schedules (torch.optim.lr_scheduler's formulas), pure functions of the step (0 for
   the first); NaN and an error for arguments out of range */
TENSOR_API double  tensor_lr_linear_warmup_cosine(int64_t step, int64_t warmup, int64_t total, double lr_max,
                                                  double lr_min);
TENSOR_API double  tensor_lr_cosine(int64_t step, int64_t t_max, double lr_max, double lr_min); /* CosineAnnealingLR */
TENSOR_API double  tensor_lr_step(int64_t step, int64_t step_size, double gamma, double lr0);    /* StepLR */
TENSOR_API double  tensor_lr_exponential(int64_t step, double gamma, double lr0);                 /* ExponentialLR */
TENSOR_API double  tensor_lr_one_cycle(int64_t step, int64_t total, double max_lr, double pct_start,
                                       double div_factor, double final_div_factor);             /* OneCycleLR, cos */
TENSOR_API void    tensor_optim_free(tensor_optim *o);
TENSOR_API double  tensor_clip_grad_norm(int n, tensor *const *params, double max_norm);  /* returns total norm */

/* ---- Distributed (>>dist): collectives over MPI with TENSOR_USE_MPI (build with mpicc), else a
   world of one rank. CPU tensors of any dtype and layout; 0 ok, else -1 (NULL) with the error on
   every rank when the ranks' calls differ in dtype, shape, op or root ---- */
typedef enum { TENSOR_REDUCE_SUM, TENSOR_REDUCE_AVG, TENSOR_REDUCE_MAX, TENSOR_REDUCE_MIN } tensor_reduce_op;
TENSOR_API int     tensor_dist_init(int *argc, char ***argv);   /* MPI_Init_thread, or adopts an initialized MPI */
TENSOR_API int     tensor_dist_rank(void);                      /* 0 without MPI */
TENSOR_API int     tensor_dist_world_size(void);                /* 1 without MPI */
TENSOR_API int     tensor_dist_all_reduce(tensor *t, tensor_reduce_op op);      /* in place, every rank */
TENSOR_API int     tensor_dist_broadcast(tensor *t, int root);                  /* in place */
TENSOR_API tensor *tensor_dist_all_gather(tensor *t);                           /* new: ranks along dim 0 */
TENSOR_API tensor *tensor_dist_reduce_scatter(tensor *t, tensor_reduce_op op);  /* dim 0 split across ranks */
TENSOR_API int     tensor_dist_barrier(void);
TENSOR_API int     tensor_dist_finalize(void);                  /* MPI_Finalize, when init started MPI */
/* Data-parallel training (torch.nn.parallel.DistributedDataParallel's scheme): rank 0's parameters
   broadcast at creation; during backward each bucket's gradients (bucket_bytes, 0: 25 MiB) are
   averaged as soon as they are all final, overlapping the rest of backward. The parameters must
   outlive it. */
typedef struct tensor_ddp tensor_ddp;
TENSOR_API tensor_ddp *tensor_ddp_new(int n, tensor *const *params, size_t bucket_bytes); /* broadcasts rank 0's values */
TENSOR_API int         tensor_ddp_sync(tensor_ddp *d);   /* after backward: every grad averaged across ranks */
TENSOR_API void        tensor_ddp_free(tensor_ddp *d);

/* ---- Files: safetensors (the native format), NumPy's .npy/.npz, checkpoints, DLPack ----
   Loaders treat every file as hostile: a malformed file is an error naming the problem, never a
   crash, and never makes them allocate more than the file's size implies. Writers replace the file
   only once it is complete (they write PATH.tmp and rename it). */
typedef struct tensor_dict tensor_dict;          /* ordered: insertion order, or file order when loaded */
TENSOR_API tensor_dict *tensor_dict_new(void);
TENSOR_API int          tensor_dict_set(tensor_dict *d, const char *name, tensor *t);  /* holds its own reference
                                                                                         (replaces a tensor of that name); 0 ok */
TENSOR_API tensor      *tensor_dict_get(const tensor_dict *d, const char *name);       /* borrowed; NULL + error if absent */
TENSOR_API bool         tensor_dict_contains(const tensor_dict *d, const char *name);
TENSOR_API int          tensor_dict_len(const tensor_dict *d);
TENSOR_API const char  *tensor_dict_name(const tensor_dict *d, int i);                 /* NULL if out of range */
TENSOR_API tensor      *tensor_dict_at(const tensor_dict *d, int i);                   /* borrowed */
TENSOR_API int          tensor_dict_set_metadata(tensor_dict *d, const char *key, const char *value);
TENSOR_API const char  *tensor_dict_metadata(const tensor_dict *d, const char *key);   /* NULL if absent */
TENSOR_API int          tensor_dict_metadata_len(const tensor_dict *d);
TENSOR_API const char  *tensor_dict_metadata_key(const tensor_dict *d, int i);         /* NULL if out of range */
TENSOR_API void         tensor_dict_free(tensor_dict *d);                              /* before tensor_shutdown */

#define TENSOR_LOAD_MMAP 1 /* map the file (private, copy on write): tensors share the file's pages, a write
                              to one copies its page and never reaches the file */
TENSOR_API int          tensor_save(const char *path, const tensor_dict *d);           /* safetensors; 0 ok */
TENSOR_API tensor_dict *tensor_load(const char *path, int flags);                      /* safetensors */
TENSOR_API int          tensor_save_safetensors(const char *path, int n, const char *const *names, tensor *const *ts);
TENSOR_API int          tensor_load_safetensors(const char *path, int *n, char ***names, tensor ***ts);
                        /* the caller frees each name and the arrays with free(), each tensor with tensor_free */
TENSOR_API int          tensor_save_npy(const char *path, tensor *t);
TENSOR_API tensor      *tensor_load_npy(const char *path);
TENSOR_API int          tensor_save_npz(const char *path, const tensor_dict *d);       /* stored (uncompressed) members */
TENSOR_API tensor_dict *tensor_load_npz(const char *path);   /* deflated members need -DTENSOR_USE_ZLIB -lz */

/* A model's parameters by name (torch's state_dict / load_state_dict). tensor_state_dict: a dict of
   the parameters, each entry a detached view sharing the parameter's memory (save it with
   tensor_save). tensor_load_state_dict checks every name and shape first and reports every problem
   in one message ("size mismatch for fc1.weight: checkpoint [3], parameter [4, 3]"; when strict,
   missing and unexpected names too); only then copies, under no-grad, into the parameters (a dtype
   that differs is converted, as torch's copy_ does; a device, moved). Nothing is copied when a
   check fails. Not strict: names absent on either side are skipped. 0 ok. */
TENSOR_API tensor_dict *tensor_state_dict(int n, const char *const *names, tensor *const *params);
TENSOR_API int          tensor_load_state_dict(const tensor_dict *d, int n, const char *const *names, tensor *const *params, bool strict);

/* Checkpoints: optimizer state (steps, moments, hyperparameters) and this thread's random generator,
   under a name prefix, in a dict saved with the parameters (tensor_save); loading restores them so
   training resumes bit for bit. */
TENSOR_API int tensor_optim_state_save(const tensor_optim *o, tensor_dict *d, const char *prefix);
TENSOR_API int tensor_optim_state_load(tensor_optim *o, const tensor_dict *d, const char *prefix);
TENSOR_API int tensor_rng_state_save(tensor_dict *d, const char *name);
TENSOR_API int tensor_rng_state_load(const tensor_dict *d, const char *name);

/* DLPack: zero-copy exchange with NumPy, PyTorch, JAX, CuPy (include dlpack.h to use the structs).
   tensor_to_dlpack: the capsule shares t's storage and keeps it alive until its deleter is called.
   tensor_from_dlpack takes ownership: the producer's deleter runs when the last tensor viewing the
   memory is freed (at once on error). Export: data is the first element, byte_offset 0; delete capsules
   before tensor_shutdown. Import copies (and calls the deleter at once) for READ_ONLY, negative strides
   or misaligned data; CUDA capsules need a CUDA build. */
struct DLManagedTensorVersioned;
struct DLManagedTensor;
TENSOR_API struct DLManagedTensorVersioned *tensor_to_dlpack(tensor *t);
TENSOR_API tensor *tensor_from_dlpack(struct DLManagedTensorVersioned *m);
TENSOR_API struct DLManagedTensor *tensor_to_dlpack_unversioned(tensor *t);   /* DLPack before 1.0 */
TENSOR_API tensor *tensor_from_dlpack_unversioned(struct DLManagedTensor *m);

/* ---- Runtime ---- */
TENSOR_API void        tensor_set_num_threads(int n);   /* 0: the default (TENSOR_NUM_THREADS, else all cores) */
TENSOR_API int         tensor_get_num_threads(void);
TENSOR_API bool        tensor_cuda_available(void);
TENSOR_API const char *tensor_version(void);            /* "MAJOR.MINOR.PATCH" */
TENSOR_API const char *tensor_build_info(void);         /* SIMD level, SLEEF, CUDA, threads */
TENSOR_API bool        tensor_set_reference_kernels(bool on); /* true: plain scalar reference kernels only
                                                                 (to check optimized paths); returns previous */

/* ---- CUDA (linked from tensor_cuda.o; without it, or without a GPU, CUDA is not available) ---- */
TENSOR_API int         tensor_cuda_device_count(void);  /* 0 without tensor_cuda.o or a GPU */
TENSOR_API int         tensor_cuda_synchronize(void);   /* waits for this thread's queued GPU work; 0 ok, else
                                                           -1 with the error (an asynchronous fault included) */
TENSOR_API void        tensor_set_allow_tf32(bool allow); /* matmul/conv in TF32 on the GPU; default false */

/* ---- The device seam (private: the contract between tensor.h and tensor_cuda.cu) ----
   A device's translation unit fills a tensor__device table and passes it to tensor__register_device
   from a static initializer, so linking its object is all a user does, and a program builds the same
   with or without it (no weak symbols, which MSVC lacks). tensor.h checks the table's ABI version and
   op names the first time the device is asked for, and reaches the device only through the table:
   memory, copies, synchronization, and one kernel per op. A kernel sees plain descriptions of its
   operands (device pointers, shapes, strides in elements), never tensor.h's structs, and runs
   asynchronously on the calling thread's stream; it returns 0, or non-zero with a message in
   error[]. Every op reaches its kernel with the call record its CPU kernel reads, except cat, which
   tensor.h runs as one copy_ per input, and dropout in training, whose record also holds the mask
   to fill (out2) and the place in the calling thread's generator of the words the CPU kernel
   would take (ip[1] key, ip[2] block counter, ip[3] stream, ip[4] words of that block used).
   tensor__register_device is not available under TENSOR_STATIC. */
#define TENSOR__DEVICE_ABI 3
typedef struct {
    void *data;                        /* the first element, in device memory; NULL for an absent operand,
                                          and for a CPU scalar passed by value */
    tensor_dtype dtype;
    int ndim;
    int64_t shape[TENSOR_MAX_DIMS];
    int64_t strides[TENSOR_MAX_DIMS];  /* in elements; 0 along broadcast dims */
    bool by_value;                     /* a CPU 0-dim input of an elementwise op: its value is below */
    double value;                      /* the value as double (float dtypes), */
    int64_t ivalue;                    /* and as int64 (integer and bool dtypes) */
} tensor__dev_operand;
typedef struct {
    tensor_op op;
    int n_in;
    tensor__dev_operand in[4];         /* inputs in the order of the op's parameters */
    tensor__dev_operand out, out2;     /* out2.data is NULL when the op has no second output */
    tensor_dtype compute;              /* the dtype elementwise ops compute in */
    double p[4];                       /* the op's parameters, as its CPU kernel reads them */
    int64_t ip[16];
    int n_dims;
    int dims[TENSOR_MAX_DIMS];
    /* backward kernels only (backward_kernels below): the forward's record above (in[] its saved
       inputs, p, ip, dims as its kernel got them; out absent, out2 the second output it kept, e.g.
       dropout's mask), grad the gradient of its output (any layout), and grads[i] the gradient of
       in[i] to write (contiguous, in[i]'s shape and dtype; data NULL where none is wanted) */
    tensor__dev_operand grad;
    tensor__dev_operand grads[4];
    char error[256];                   /* a failing kernel's message */
} tensor__dev_call;
typedef int (*tensor__dev_kernel)(tensor__dev_call *c);
typedef enum { TENSOR__COPY_TO_DEVICE, TENSOR__COPY_TO_HOST, TENSOR__COPY_ON_DEVICE } tensor__copy_kind;
/* One parameter's update (the rule of torch.optim's SGD, Adam, AdamW; tensor__optim_update in the
   shared formulas): the optimizer's constants and this parameter's step. */
enum { TENSOR__SGD, TENSOR__ADAM, TENSOR__ADAMW };
typedef struct {
    int kind;                          /* TENSOR__SGD, TENSOR__ADAM or TENSOR__ADAMW */
    bool first;                        /* the state was just made (SGD's buffer starts as the gradient) */
    bool nesterov;
    double lr, momentum, weight_decay, beta1, beta2, eps;
    double bias1, bias2;               /* 1 - beta1^step, 1 - beta2^step */
} tensor__optim_rule;
/* An optimizer step of n parameters on the device: one call, so the device may fuse them. The
   state operands (momentum buffer / exp_avg, exp_avg_sq) are contiguous, f64 for f64 parameters
   and f32 otherwise, data NULL where the rule keeps none. */
typedef struct {
    int n;
    const tensor__optim_rule *rules;   /* [n] */
    const tensor__dev_operand *params, *grads, *state1, *state2; /* [n] each */
    char error[256];
} tensor__dev_optim;
typedef struct tensor__device {
    int abi;                           /* TENSOR__DEVICE_ABI */
    tensor_device device;              /* the column it fills */
    int op_count;                      /* TENSOR_OP_COUNT of the tensor.h it was compiled with */
    const char *const *op_names;       /* and that tensor.h's op names, op_count of them */
    const tensor__dev_kernel *kernels; /* op_count entries; NULL where the device has no kernel */
    int (*device_count)(void);
    const char *(*info)(void);         /* one line for tensor_build_info: the GPU and the runtime */
    void *(*alloc)(size_t nbytes, char *error, size_t error_len); /* NULL + message when out of memory */
    void (*free)(void *p);             /* from any thread */
    /* copies nbytes (stream-ordered on the calling thread's stream; a copy to the host returns
       when the bytes are there); 0 ok */
    int (*copy)(void *dst, const void *src, size_t nbytes, tensor__copy_kind kind, char *error, size_t error_len);
    int (*synchronize)(char *error, size_t error_len); /* the calling thread's stream; reports earlier faults */
    void (*empty_cache)(void);         /* gives cached device memory back */
    void (*set_allow_tf32)(bool allow);
    int (*optim_step)(tensor__dev_optim *s); /* tensor_optim_step of the device's parameters; 0 ok */
    /* op_count entries: an op's fused backward, which tensor_backward runs when it builds no graph
       (no create_graph); NULL: the derivative of tensor_autograd.h, composed of ops. The whole
       table may be NULL. */
    const tensor__dev_kernel *backward_kernels;
    /* the sum of the squares of every element of n tensors, in double, waiting for it
       (tensor_clip_grad_norm: one pass, one value back); 0 ok. NULL: composed of the device's ops */
    int (*sum_squares)(int n, const tensor__dev_operand *ts, double *total, char *error, size_t error_len);
} tensor__device;
TENSOR_API void tensor__register_device(const tensor__device *d);
#ifdef TENSOR_TEST_HOOKS
/* Test builds only (the suite defines TENSOR_TEST_HOOKS): how many times a fast path ran, by name
   (conv_winograd, conv_im2col_simd, conv_smallk, maxpool_fast, relu_backward_fused,
   unary_backward_fused, optim_simd); -1 for another name. The tests compare each fast path with the
   reference, and with these they also see that it is taken where it should be. */
TENSOR_API int64_t     tensor_test_path_count(const char *path);
/* products.h: "einsum_cost", the planned multiply-adds of this thread's last einsum; "copies", how
   many operand arrangements of the products (per thread) had to be copied rather than viewed. */
TENSOR_API double      tensor_test_products_stat(const char *what);
/* Allocation-failure injection: from now on, count every memory request of the library (storage,
   handles, graph nodes, scratch, whether cached or not) and fail the k-th one (0: fail none).
   tensor_test_alloc_count() is the number of requests since the last call. */
TENSOR_API void        tensor_test_fail_alloc(int64_t k);
TENSOR_API int64_t     tensor_test_alloc_count(void);
/* While hold is true, the pool's workers take no part in any job, as workers that the scheduler
   does not run: the caller must finish every op by itself. */
TENSOR_API void        tensor_test_hold_workers(bool hold);
/* From now on fail every memory request over `bytes` (0: none), and tensor_test_alloc_largest()
   is the largest request (in bytes) since the last call. */
TENSOR_API void        tensor_test_alloc_cap(int64_t bytes);
TENSOR_API int64_t     tensor_test_alloc_largest(void);
#endif

/* ---- Ops of the registry (ops.def), one prototype each ---- */
//@@ OPS_PROTOTYPES

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* TENSOR_H */
