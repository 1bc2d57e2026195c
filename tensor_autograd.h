// >>autograd -----------------------------------------------------------------------------------
/* tensor_autograd.h: reverse-mode automatic differentiation, define-by-run like PyTorch.
   The generator amalgamates this file into tensor.h after the kernels.

   The graph: an op whose inputs require grad records a node on its output (tensor__dispatch calls
   tensor__autograd_record). A node keeps the op, its parameters, aliases of its inputs (for the
   derivative), and one edge per input: the node that made that input, or the input's accumulator if
   it is a leaf that requires grad. A leaf's accumulator node holds its .grad, so every handle of a
   leaf sees one gradient. Nodes are refcounted by the handles that point at them and by the nodes
   downstream; they are freed without recursion, so a 100,000-op chain is fine.

   The derivatives: below the engine, one function per differentiable op of ops.def, keyed by name
   (tensor__derivative_NAME). Each is written with the library's own ops, so when the engine runs
   with create_graph the backward pass is itself recorded and can be differentiated again. */

static TENSOR__THREAD_LOCAL bool tensor__no_grad; /* grad mode is per thread, as in PyTorch */

static bool tensor__grad_on(void) { return !tensor__no_grad; }

TENSOR_API bool tensor_set_grad_enabled(bool on) {
    bool was = !tensor__no_grad;
    tensor__no_grad = !on;
    return was;
}

/* A post-accumulate-grad hook of a leaf (tensor_register_post_accumulate_grad_hook). */
typedef struct tensor__grad_hook {
    tensor_grad_hook fn;
    void *user;
    struct tensor__grad_hook *next;
} tensor__grad_hook;

typedef struct tensor__node {
    tensor__refs refs;                          /* biased: the owner is the thread that recorded it (>>threads-state) */
    int op;                                     /* a tensor_op, or -1 for a leaf's accumulator */
    tensor *grad;                               /* accumulators: the leaf's .grad (internal handle) */
    int n_in;
    struct tensor__node **next;                 /* [n_in] where each input's gradient goes; NULL: nowhere */
    tensor **saved;                             /* [n_in] the inputs, while the graph is alive */
    int64_t *saved_version;                     /* [n_in] their storage versions when saved */
    tensor *extra;                              /* a kernel's second output it needs (dropout's mask) */
    double p[4];
    int64_t ip[16];
    int64_t pads[2 * TENSOR_MAX_DIMS];          /* pad: a copy of the pads */
    int n_dims, dims[TENSOR_MAX_DIMS];
    bool released;                              /* saved tensors freed after a backward pass */
    struct tensor__grad_hook *hooks;            /* accumulators: run when the leaf's gradient is final */
    /* engine scratch */
    tensor *acc;                                /* gradient of the output accumulated so far */
    int64_t deps, epoch;
    struct tensor__node *free_next;             /* in the node cache, the next free node */
} tensor__node;

typedef int (*tensor__derivative_fn)(tensor__node *n, tensor *g, tensor **grads);

/* ---- node lifetime (no recursion: releases go through a worklist) ----
   Threads: the worklist and the node cache are the calling thread's (in its tensor__thread). A
   node's references are biased toward its owner (a shared weight's accumulator gets edges from
   every thread's graphs); the node is destroyed on its owner's thread, which took its edges: the
   last reference dropped on another thread sends it there (tensor__send_node). */
static void tensor__node_free_saved(tensor__node *n) {
    for (int i = 0; i < n->n_in; i++) {
        if (n->saved[i]) { tensor__storage_saved_add(n->saved[i]->storage, -1); tensor_free(n->saved[i]); n->saved[i] = NULL; }
    }
    if (n->extra) { tensor__storage_saved_add(n->extra->storage, -1); tensor_free(n->extra); n->extra = NULL; }
    n->released = true;
}

static void tensor__node_destroy(tensor__node *n);

/* Freed nodes of up to TENSOR__MAX_INPUTS inputs wait in the thread's node_cache, one list per
   input count, for the next op that records one (a training step records and frees the same
   nodes every step). */
#define TENSOR__NODE_CACHE_MAX 4096
typedef char tensor__node_lists_fit[TENSOR__MAX_INPUTS < TENSOR__NODE_LISTS ? 1 : -1];

static void tensor__node_recycle(tensor__node *n) {
    tensor__thread *me = tensor__self;
    if (!me || n->n_in > TENSOR__MAX_INPUTS || me->node_cache_n >= TENSOR__NODE_CACHE_MAX) { TENSOR_FREE(n); return; }
    n->free_next = me->node_cache[n->n_in];
    me->node_cache[n->n_in] = n;
    me->node_cache_n++;
    TENSOR__POISON(n, sizeof *n); /* ASan still sees a use after free: all but the link */
    TENSOR__UNPOISON(&n->free_next, sizeof n->free_next);
}
static void tensor__node_cache_clear(tensor__thread *me) {
    for (int k = 0; k <= TENSOR__MAX_INPUTS; k++)
        while (me->node_cache[k]) {
            tensor__node *n = me->node_cache[k];
            me->node_cache[k] = n->free_next;
            TENSOR__UNPOISON(n, sizeof *n);
            TENSOR_FREE(n);
        }
    me->node_cache_n = 0;
}

/* n, whose last reference went on a thread other than its owner, to its owner to destroy (the
   same pairing with an ending owner as tensor__send_handle's). */
static void tensor__send_node(tensor__node *n) {
    tensor__thread *owner = n->refs.owner;
    tensor__node *head = (tensor__node *)TENSOR__LOAD(&owner->remote_nodes);
    do n->free_next = head;
    while (!TENSOR__CAS(&owner->remote_nodes, &head, n));
    TENSOR__STORE_SC(&owner->pending, 1);
    if (TENSOR__LOAD_SC(&owner->exited)) tensor__reap();
}

/* n's last reference went on thread me: n goes to its owner, or on the worklist here. */
static void tensor__node_dead(tensor__node *n, tensor__thread *me) {
    if (n->refs.owner != me) { tensor__send_node(n); return; }
    if (me->release_n == me->release_cap) {
        int64_t cap = me->release_cap ? me->release_cap * 2 : 256;
        tensor__node **s = (tensor__node **)TENSOR__MALLOC(sizeof *s * (size_t)cap);
        if (!s) { tensor__node_destroy(n); return; } /* no room to defer: free it now */
        if (me->release_n) memcpy(s, me->release_stack, sizeof *s * (size_t)me->release_n);
        if (me->release_stack) TENSOR_FREE(me->release_stack);
        me->release_stack = s;
        me->release_cap = cap;
    }
    me->release_stack[me->release_n++] = n;
    if (me->releasing) return;
    me->releasing = true;
    while (me->release_n > 0) tensor__node_destroy(me->release_stack[--me->release_n]);
    me->releasing = false;
}
/* Drops one reference the calling thread took (inline: most drops are not the last). */
static inline void tensor__node_unref(tensor__node *n) {
    tensor__thread *me = tensor__self;
    if (n && tensor__refs_drop(&n->refs, me)) tensor__node_dead(n, me);
}

static void tensor__node_destroy(tensor__node *n) {
    tensor__node_free_saved(n);
    while (n->hooks) {
        tensor__grad_hook *h = n->hooks;
        n->hooks = h->next;
        TENSOR_FREE(h);
    }
    for (int i = 0; i < n->n_in; i++) tensor__node_unref(n->next[i]);
    tensor_free(n->grad);
    tensor_free(n->acc);
    tensor__node_recycle(n);
}

/* One block: the node, then its n_in edges, saved inputs and versions. */
static tensor__node *tensor__node_new(int op, int n_in) {
    size_t bytes = sizeof(tensor__node) + (size_t)n_in * (sizeof(tensor__node *) + sizeof(tensor *) + sizeof(int64_t));
    if (TENSOR__ALLOC_FAILS(bytes)) return NULL;
    tensor__thread *me = tensor__self;
    tensor__node *n = me && n_in <= TENSOR__MAX_INPUTS ? me->node_cache[n_in] : NULL;
    if (n) { me->node_cache[n_in] = n->free_next; me->node_cache_n--; TENSOR__UNPOISON(n, sizeof *n); }
    else if (!(n = (tensor__node *)TENSOR_MALLOC(bytes))) return NULL;
    memset(n, 0, bytes);
    tensor__refs_init(&n->refs, me);
    n->op = op;
    n->n_in = n_in;
    n->saved_version = (int64_t *)(n + 1);
    n->next = (tensor__node **)(n->saved_version + n_in);
    n->saved = (tensor **)(n->next + n_in);
    return n;
}

static tensor__node *tensor__node_ref(tensor__node *n) {
    if (n) tensor__refs_take(&n->refs, tensor__self);
    return n;
}

/* Destroys the nodes other threads sent to me (>>scopes' tensor__drain). */
static void tensor__drain_nodes(tensor__thread *me) {
    tensor__node *n = (tensor__node *)TENSOR__EXCHANGE(&me->remote_nodes, (tensor__node *)NULL);
    while (n) {
        tensor__node *next = n->free_next;
        tensor__refs_init(&n->refs, me); /* a reference of me's to drop: the usual path destroys it */
        tensor__node_unref(n);
        n = next;
    }
}

static void tensor__autograd_release(tensor *t) {
    tensor__node_unref(t->grad_fn);
    t->grad_fn = NULL;
}

/* An internal alias of t that keeps t's autograd identity (for saved inputs). */
static tensor *tensor__save(const tensor *t) {
    tensor__thread *me = tensor__me();
    if (!me) return tensor__fail("tensor_backward", "out of memory");
    int depth = me->depth;
    me->depth = -1; /* made straight into the internal list (handles are linked at depth), not moved
                       there (the op overhead's 3 ns); an error handler making tensors meanwhile makes
                       internal ones */
    tensor *s = tensor__alias("tensor_backward", t);
    me->depth = depth;
    if (!s) return NULL;
    tensor__storage_saved_add(s->storage, 1);
    return s;
}

// >>autograd-record ----------------------------------------------------------------------------
static bool tensor__is_leaf(const tensor *t) { return !t->grad_fn || t->grad_fn->op < 0; }

/* The edge an input's gradient flows along: its creator node, or its accumulator if it is a leaf
   that requires grad (made on first use), or NULL. NULL for a tensor that requires grad means no
   memory for its accumulator: callers check tensor__has_edge. */
static tensor__node *tensor__grad_edge(tensor *t) {
    if (!t || !t->requires_grad) return NULL;
    if (!t->grad_fn && (t->grad_fn = tensor__node_new(-1, 0)) != NULL)
        t->grad_fn->refs.owner = t->owner; /* its one reference is t's, dropped on t's owner's thread */
    return t->grad_fn;
}
static bool tensor__has_edge(tensor *t) { return !t || !t->requires_grad || tensor__grad_edge(t); }

/* Records c's node on c->out. false, with an error, when there is no memory for the node, an
   edge or a saved input: the caller then frees the output and fails, so an op never returns a
   result whose gradient would silently go missing. */
static bool tensor__autograd_record(tensor__call *c) {
    if (tensor__no_grad || !c->out || !tensor__ops[c->op].differentiable) return true;
    bool needed = false;
    for (int i = 0; i < c->n_in; i++) needed |= c->in[i] && c->in[i]->requires_grad;
    if (!needed) return true;
    if (!tensor__is_float(c->out->dtype)) return true; /* integer results carry no gradient */
    /* cat takes any number of inputs: the call holds the array (ip[1]) and its length (ip[0]) */
    tensor *const *in = c->op == TENSOR_OP_cat ? (tensor *const *)(uintptr_t)c->ip[1] : c->in;
    int n_in = c->op == TENSOR_OP_cat ? (int)c->ip[0] : c->n_in;
    if (c->op == TENSOR_OP_cat) {
        needed = false;
        for (int i = 0; i < n_in; i++) needed |= in[i]->requires_grad;
        if (!needed) return true;
    }
    tensor__node *n = tensor__node_new(c->op, n_in);
    if (!n) { tensor__fail(c->fn, "out of memory recording the autograd graph"); return false; }
    memcpy(n->p, c->p, sizeof n->p);
    memcpy(n->ip, c->ip, sizeof n->ip);
    n->n_dims = c->n_dims;
    memcpy(n->dims, c->dims, sizeof n->dims);
    if (c->op == TENSOR_OP_pad) /* the call points at the caller's pads: keep a copy */
        for (int i = 0; i < (int)c->ip[0]; i++) n->pads[i] = ((const int64_t *)(uintptr_t)c->ip[1])[i];
    bool ok = true;
    for (int i = 0; i < n_in && ok; i++) {
        if (!in[i]) continue;
        ok = tensor__has_edge(in[i]) && (n->saved[i] = tensor__save(in[i])) != NULL;
        n->next[i] = tensor__node_ref(tensor__grad_edge(in[i]));
        n->saved_version[i] = in[i]->storage->version;
    }
    if (ok && c->out2) ok = (n->extra = tensor__save(c->out2)) != NULL;
    if (!ok) {
        tensor__node_unref(n); /* frees what was saved and drops the edges */
        tensor__fail(c->fn, "out of memory recording the autograd graph");
        return false;
    }
    c->out->grad_fn = n;
    c->out->requires_grad = true;
    return true;
}

/* Refuses in-place writes that could make a gradient silently wrong. */
static bool tensor__check_inplace(const char *fn, tensor *a) {
    if (tensor__no_grad) return true; /* e.g. an optimizer step; a later backward checks versions */
    if (a->requires_grad) {
        tensor__fail(fn, "in-place op on a tensor that requires grad%s; use the out-of-place op or disable grad",
                     tensor__is_leaf(a) ? " (a leaf)" : "");
        return false;
    }
    if (tensor__storage_saved(a->storage)) {
        tensor__fail(fn, "in-place op on a tensor that an autograd graph saved for its backward pass; "
                         "run backward first, clone it, or disable grad");
        return false;
    }
    return true;
}

// >>autograd-api -------------------------------------------------------------------------------
TENSOR_API tensor *tensor_set_requires_grad(tensor *t, bool on) {
    const char *fn = "tensor_set_requires_grad";
    TENSOR__CHECK_ARG(fn, t);
    if (on && !tensor__is_float(t->dtype)) return tensor__fail(fn, "only floating tensors can require grad, got %s", tensor__dtype_names[t->dtype]);
    if (!tensor__is_leaf(t)) {
        if (!on) return tensor__fail(fn, "cannot turn off requires_grad of a non-leaf tensor; use tensor_detach");
        return t;
    }
    t->requires_grad = on;
    if (on && !tensor__grad_edge(t)) {
        t->requires_grad = false;
        return tensor__fail(fn, "out of memory making the gradient accumulator");
    }
    return t;
}

TENSOR_API bool tensor_requires_grad(const tensor *t) { return t && t->requires_grad; }

TENSOR_API tensor *tensor_grad(tensor *t) {
    if (!t) return tensor__null_arg("tensor_grad", "t");
    return t->grad_fn && t->grad_fn->op < 0 ? t->grad_fn->grad : NULL;
}

TENSOR_API void tensor_zero_grad(tensor *t) {
    if (t && t->grad_fn && t->grad_fn->op < 0) { tensor_free(t->grad_fn->grad); t->grad_fn->grad = NULL; }
}

/* The hooks run in backward (tensor_backward, tensor_backward_with) when every gradient reaching the
   leaf has been summed: grad is the leaf's new .grad, borrowed for the call (the leaf holds it once
   the whole pass has succeeded). In registration order; the same (fn, user) twice runs twice. */
TENSOR_API int tensor_register_post_accumulate_grad_hook(tensor *leaf, tensor_grad_hook fn, void *user) {
    const char *fn_name = "tensor_register_post_accumulate_grad_hook";
    if (!leaf) { tensor__null_arg(fn_name, "leaf"); return -1; }
    if (!fn) { tensor__null_arg(fn_name, "fn"); return -1; }
    if (!leaf->requires_grad || !tensor__is_leaf(leaf)) { tensor__fail(fn_name, "the tensor is not a leaf that requires grad"); return -1; }
    tensor__node *n = tensor__grad_edge(leaf);
    tensor__grad_hook *h = TENSOR__ALLOC_FAILS(sizeof *h) ? NULL : (tensor__grad_hook *)TENSOR_MALLOC(sizeof *h);
    if (!n || !h) { if (h) TENSOR_FREE(h); tensor__fail(fn_name, "out of memory"); return -1; }
    h->fn = fn;
    h->user = user;
    h->next = NULL;
    tensor__grad_hook **at = &n->hooks;
    while (*at) at = &(*at)->next;
    *at = h;
    return 0;
}
/* Removes the first hook registered with this fn and user; -1 (and an error) when there is none. */
TENSOR_API int tensor_remove_post_accumulate_grad_hook(tensor *leaf, tensor_grad_hook fn, void *user) {
    const char *fn_name = "tensor_remove_post_accumulate_grad_hook";
    if (!leaf) { tensor__null_arg(fn_name, "leaf"); return -1; }
    tensor__node *n = leaf->grad_fn && leaf->grad_fn->op < 0 ? leaf->grad_fn : NULL;
    for (tensor__grad_hook **at = n ? &n->hooks : NULL; at && *at; at = &(*at)->next)
        if ((*at)->fn == fn && (*at)->user == user) {
            tensor__grad_hook *h = *at;
            *at = h->next;
            TENSOR_FREE(h);
            return 0;
        }
    tensor__fail(fn_name, "no such hook on this tensor");
    return -1;
}

TENSOR_API tensor *tensor_detach(tensor *t) {
    TENSOR__CHECK_ARG("tensor_detach", t);
    tensor *d = tensor__view_of("tensor_detach", t, t->ndim, t->shape, t->strides, t->offset);
    return d; /* tensor__view_of makes a handle with no grad_fn and requires_grad false */
}

// >>autograd-engine ----------------------------------------------------------------------------
/* derivative[op]: one function per differentiable op of the registry with a kernel or a view,
   defined below the engine; such an op without one fails to compile.
   Composite ops need none: the ops they are written with record the graph. */
#define TENSOR__DECLARE_DERIVATIVE_KERNEL_DIFF(name) static int tensor__derivative_##name(tensor__node *n, tensor *g, tensor **grads);
#define TENSOR__DECLARE_DERIVATIVE_VIEW_DIFF TENSOR__DECLARE_DERIVATIVE_KERNEL_DIFF
#define TENSOR__DECLARE_DERIVATIVE_KERNEL_NODIFF(name)
#define TENSOR__DECLARE_DERIVATIVE_VIEW_NODIFF(name)
#define TENSOR__DECLARE_DERIVATIVE_COMPOSITE_DIFF(name)
#define TENSOR__DECLARE_DERIVATIVE_COMPOSITE_NODIFF(name)
#define TENSOR__DECLARE_DERIVATIVE_(impl, grad, name) TENSOR__DECLARE_DERIVATIVE_##impl##_##grad(name)
#define TENSOR__DECLARE_DERIVATIVE(name, kind, impl, types, grad, params, doc) TENSOR__DECLARE_DERIVATIVE_(impl, grad, name)
TENSOR_OPS(TENSOR__DECLARE_DERIVATIVE)
#define TENSOR__DERIVATIVE_ENTRY_KERNEL_DIFF(name) tensor__derivative_##name,
#define TENSOR__DERIVATIVE_ENTRY_VIEW_DIFF TENSOR__DERIVATIVE_ENTRY_KERNEL_DIFF
#define TENSOR__DERIVATIVE_ENTRY_KERNEL_NODIFF(name) 0,
#define TENSOR__DERIVATIVE_ENTRY_VIEW_NODIFF(name) 0,
#define TENSOR__DERIVATIVE_ENTRY_COMPOSITE_DIFF(name) 0,
#define TENSOR__DERIVATIVE_ENTRY_COMPOSITE_NODIFF(name) 0,
#define TENSOR__DERIVATIVE_ENTRY_(impl, grad, name) TENSOR__DERIVATIVE_ENTRY_##impl##_##grad(name)
#define TENSOR__DERIVATIVE_ENTRY(name, kind, impl, types, grad, params, doc) TENSOR__DERIVATIVE_ENTRY_(impl, grad, name)
static const tensor__derivative_fn tensor__derivatives[TENSOR_OP_COUNT] = {TENSOR_OPS(TENSOR__DERIVATIVE_ENTRY)};
/* The nodes some composites record on the CPU fast path (>>norm, >>resample), and linalg_pinv's
   (>>linalg-norm): below, with the layers' derivatives. */
static int tensor__derivative_layer(tensor__node *n, tensor *g, tensor **grads);

/* g reduced to shape (ndim, shape) by summing the dims broadcasting added or expanded. */
static tensor *tensor__sum_to(tensor *g, int ndim, const int64_t *shape) {
    if (!g) return NULL;
    int lead = g->ndim - ndim, dims[TENSOR_MAX_DIMS], nd = 0;
    for (int d = 0; d < g->ndim; d++)
        if (d < lead || (shape[d - lead] == 1 && g->shape[d] != 1)) dims[nd++] = d;
    if (nd == 0 && lead == 0) return tensor__alias("tensor_backward", g);
    tensor *s = tensor_sum_dims(g, nd, dims, true);
    tensor *r = tensor_reshape(s, ndim, shape);
    tensor_free(s);
    return r;
}

/* Moves an internal handle to the innermost scope, where the user owns it. */
static tensor *tensor__make_owned(tensor *t) {
    if (t && t->list_level < 0) { tensor__unlink(t); tensor__link(t, t->owner->depth); }
    return t;
}

/* acc += g, keeping acc an internal handle (NULL acc: takes g). */
static bool tensor__accumulate(tensor **acc, tensor *g) {
    if (!*acc) { *acc = tensor__make_internal(g); return true; }
    tensor *s = tensor_add(*acc, g);
    tensor_free(g);
    if (!s) return false;
    tensor_free(*acc);
    *acc = tensor__make_internal(s);
    return true;
}

typedef struct { tensor__node **v; int64_t n, cap; } tensor__node_list;
static bool tensor__node_push(tensor__node_list *l, tensor__node *n) {
    if (l->n == l->cap) {
        int64_t cap = l->cap ? l->cap * 2 : 64;
        tensor__node **v = (tensor__node **)TENSOR__MALLOC(sizeof *v * (size_t)cap);
        if (!v) return false;
        if (l->n) memcpy(v, l->v, sizeof *v * (size_t)l->n);
        if (l->v) TENSOR_FREE(l->v);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = n;
    return true;
}

/* One count for every thread (atomic): two passes, whichever threads run them, never share an
   epoch, so a node that both reach (a shared weight's accumulator) is never taken as visited. */
static int64_t tensor__epoch;

/* A device's fused backward of node n (tensor__device.backward_kernels), when its inputs live on a
   device that has one and no graph is being built: grads[i] made on the device for the inputs that
   need one. 1 done, 0 none (the derivative composes ops), -1 error. */
static int tensor__device_backward(const char *fn, tensor__node *n, tensor *g, tensor **grads) {
    if (!tensor__no_grad || n->n_in > TENSOR__MAX_INPUTS || g->storage->device == TENSOR_CPU) return 0;
    tensor_device dev = g->storage->device;
    const tensor__device *d = tensor__devices[dev];
    tensor__dev_kernel k = d->backward_kernels ? d->backward_kernels[n->op] : NULL;
    if (!k) return 0;
    for (int i = 0; i < n->n_in; i++)
        if (n->saved[i] && n->saved[i]->storage->device != dev) return 0;
    tensor__dev_call dc;
    memset(&dc, 0, sizeof dc);
    dc.op = (tensor_op)n->op;
    dc.n_in = n->n_in;
    memcpy(dc.p, n->p, sizeof dc.p);
    memcpy(dc.ip, n->ip, sizeof dc.ip);
    dc.n_dims = n->n_dims;
    memcpy(dc.dims, n->dims, sizeof dc.dims);
    tensor__dev_operand_of(&dc.out2, n->extra);
    tensor__dev_operand_of(&dc.grad, g);
    dc.compute = g->dtype;
    int rc = 1;
    for (int i = 0; i < n->n_in && rc == 1; i++) {
        tensor *x = n->saved[i];
        tensor__dev_operand_of(&dc.in[i], x);
        grads[i] = NULL;
        if (!x || !n->next[i] || !tensor__is_float(x->dtype)) continue;
        if (!(grads[i] = tensor__new(fn, x->ndim, x->shape, x->dtype, dev))) rc = -1;
        else tensor__dev_operand_of(&dc.grads[i], grads[i]);
    }
    if (rc == 1 && k(&dc)) {
        dc.error[sizeof dc.error - 1] = 0;
        tensor__fail(fn, "%s", dc.error[0] ? dc.error : "the device's backward kernel failed");
        rc = -1;
    }
    if (rc < 0)
        for (int i = 0; i < n->n_in; i++) { tensor_free(grads[i]); grads[i] = NULL; }
    return rc;
}

/* The engine. Runs the graph above the roots once in reverse topological order (dependency
   counting, no recursion). accumulate: leaves' .grad += their gradient (tensor_backward);
   otherwise the gradients reaching the nodes of `wanted` are returned in got[] (autograd_grad).
   Returns 0, or -1 with an error. */
static int tensor__run_backward(const char *fn, int n_roots, tensor *const *roots, tensor *const *root_grads,
                                bool create_graph, bool accumulate, int n_wanted, tensor__node *const *wanted, tensor **got) {
    tensor__node_list all = {NULL, 0, 0}, stack = {NULL, 0, 0}, ready = {NULL, 0, 0};
    int64_t epoch = TENSOR__ADD(&tensor__epoch, 1);
    int rc = 0;
    bool grad_was = tensor_set_grad_enabled(create_graph);
    /* 1. find the nodes above the roots; count each one's consumers */
    for (int r = 0; r < n_roots; r++) {
        tensor__node *n = roots[r]->grad_fn;
        if (n->epoch != epoch) { n->epoch = epoch; n->deps = 0; if (!tensor__node_push(&stack, n) || !tensor__node_push(&all, n)) goto oom; }
    }
    while (stack.n) {
        tensor__node *n = stack.v[--stack.n];
        if (n->released && n->op >= 0) {
            tensor__fail(fn, "the graph through %s was already freed by an earlier backward pass", tensor__ops[n->op].fn);
            rc = -1;
            goto done;
        }
        for (int i = 0; i < n->n_in; i++) {
            tensor__node *m = n->next[i];
            if (!m) continue;
            if (m->epoch != epoch) { m->epoch = epoch; m->deps = 0; if (!tensor__node_push(&stack, m) || !tensor__node_push(&all, m)) goto oom; }
            m->deps++;
        }
    }
    /* 2. seed the roots */
    for (int r = 0; r < n_roots; r++) {
        tensor *rg = root_grads ? root_grads[r] : NULL;
        tensor *g = rg ? tensor__alias(fn, rg) : tensor__full_on(roots[r]->ndim, roots[r]->shape, 1, roots[r]->dtype, roots[r]->storage->device);
        if (!g || !tensor__accumulate(&roots[r]->grad_fn->acc, g)) { rc = -1; goto done; }
    }
    for (int64_t i = 0; i < all.n; i++)
        if (all.v[i]->deps == 0 && !tensor__node_push(&ready, all.v[i])) goto oom;
    /* 3. run each node once all its consumers have passed their gradient down */
    while (ready.n) {
        tensor__node *n = ready.v[--ready.n];
        tensor *g = n->acc;
        n->acc = NULL;
        for (int w = 0; w < n_wanted; w++)
            if (wanted[w] == n && g) {
                tensor *c = tensor__alias(fn, g);
                if (!c || (got[w] && !tensor__accumulate(&got[w], c))) { rc = -1; tensor_free(g); goto done; }
                if (!got[w]) got[w] = tensor__make_internal(c);
            }
        tensor *small[TENSOR__MAX_INPUTS] = {NULL, NULL, NULL, NULL};
        tensor **grads = small;
        if (n->n_in > TENSOR__MAX_INPUTS) {
            grads = (tensor **)TENSOR__MALLOC(sizeof(tensor *) * (size_t)n->n_in);
            if (!grads) { tensor_free(g); goto oom; }
            memset(grads, 0, sizeof(tensor *) * (size_t)n->n_in);
        }
        if (n->op < 0) {                                      /* a leaf's accumulator */
            if (accumulate && g) {
                /* a first .grad gets storage of its own, as PyTorch's AccumulateGrad: g may be an
                   expanded view or share its storage with another leaf's gradient (add passes g
                   to both inputs), and .grad is written in place (tensor_clip_grad_norm, users) */
                if (!n->grad && (!tensor__refs_sole(&g->storage->refs, tensor__self) || !tensor__contiguous(g))) {
                    tensor *own = tensor_clone(g);
                    tensor_free(g);
                    if (!own) { if (grads != small) TENSOR_FREE(grads); rc = -1; goto done; }
                    g = own;
                }
                tensor *add = create_graph ? g : tensor_detach(g);
                if (add != g) tensor_free(g);
                g = NULL;
                /* the new .grad waits in acc until the whole pass has succeeded (see done:), so a
                   pass that fails leaves every .grad as it was */
                tensor *sum = add && n->grad ? tensor_add(n->grad, add) : add;
                if (sum != add) tensor_free(add);
                if (!sum) { if (grads != small) TENSOR_FREE(grads); rc = -1; goto done; }
                n->acc = tensor__make_internal(sum);
                for (tensor__grad_hook *h = n->hooks; h; h = h->next) h->fn(n->acc, h->user);
            }
        } else if (g) {
            for (int i = 0; i < n->n_in; i++)
                if (n->saved[i] && n->saved[i]->storage->version != n->saved_version[i]) {
                    tensor__fail(fn, "an input of %s was modified in place after it was used; its gradient would be wrong", tensor__ops[n->op].fn);
                    tensor_free(g);
                    rc = -1;
                    goto done;
                }
            if (!tensor__scope_push(fn)) { /* the derivative's intermediates need a scope of their own */
                tensor_free(g);
                if (grads != small) TENSOR_FREE(grads);
                rc = -1;
                goto done;
            }
            /* an empty output's inputs get zero gradients, at once: a derivative would still do work
               in proportion to their other dims (softmax's sum over an empty dim is a [1, N] tensor).
               With create_graph the derivative runs, so the zeros stay in the graph. */
            int drc = 0;
            if (!create_graph && tensor__numel_of(g->ndim, g->shape) == 0) {
                for (int i = 0; i < n->n_in && !drc; i++)
                    if (n->next[i] && !(grads[i] = tensor__full_on(n->saved[i]->ndim, n->saved[i]->shape, 0, n->saved[i]->dtype, n->saved[i]->storage->device))) drc = 1;
            } else {
                int fused = tensor__device_backward(fn, n, g, grads);
                drc = fused ? fused < 0 : tensor__derivatives[n->op] ? tensor__derivatives[n->op](n, g, grads) : tensor__derivative_layer(n, g, grads);
            }
            for (int i = 0; i < n->n_in; i++) {
                if (!n->next[i] || !grads[i]) {
                    /* an input that needs a gradient and got none: the derivative failed without saying so */
                    if (n->next[i] && !drc) drc = (tensor__fail(fn, "the derivative of %s gave no gradient for input %d", tensor__ops[n->op].fn, i), 1);
                    grads[i] = NULL;
                    continue;
                }
                /* the gradient of an input has the input's shape and dtype */
                tensor *s = tensor__sum_to(grads[i], n->saved[i]->ndim, n->saved[i]->shape);
                tensor *d = s && s->dtype != n->saved[i]->dtype ? tensor_to_dtype(s, n->saved[i]->dtype) : s;
                grads[i] = d ? tensor__make_internal(tensor_keep(d)) : NULL;
                if (!d) drc = 1;
            }
            tensor_scope_end();
            tensor_free(g);
            g = NULL;
            if (drc) {
                for (int i = 0; i < n->n_in; i++) tensor_free(grads[i]);
                if (grads != small) TENSOR_FREE(grads);
                if (!tensor_last_error()) tensor__fail(fn, "the derivative of %s failed", tensor__ops[n->op].fn);
                rc = -1;
                goto done;
            }
        }
        tensor_free(g);
        bool ok = true;
        for (int i = 0; i < n->n_in; i++) {
            tensor__node *m = n->next[i];
            if (!m) continue;
            if (grads[i] && ok && !tensor__accumulate(&m->acc, grads[i])) ok = false;
            else if (!ok) tensor_free(grads[i]);
            if (--m->deps == 0 && !tensor__node_push(&ready, m)) ok = false;
        }
        if (grads != small) TENSOR_FREE(grads);
        if (!ok) { if (!tensor_last_error()) tensor__fail(fn, "out of memory in backward"); rc = -1; goto done; }
    }
    goto done;
oom:
    tensor__fail(fn, "out of memory walking the autograd graph");
    rc = -1;
done:
    for (int64_t i = 0; i < all.n; i++) {
        tensor__node *n = all.v[i];
        if (rc == 0 && accumulate && n->op < 0 && n->acc) { /* commit the leaves' new .grad: no allocation, cannot fail */
            tensor_free(n->grad);
            n->grad = n->acc;
        } else tensor_free(n->acc);
        n->acc = NULL;
        if (!create_graph && n->op >= 0) tensor__node_free_saved(n); /* the graph frees itself */
    }
    if (all.v) TENSOR_FREE(all.v);
    if (stack.v) TENSOR_FREE(stack.v);
    if (ready.v) TENSOR_FREE(ready.v);
    tensor_set_grad_enabled(grad_was);
    return rc;
}

TENSOR_API int tensor_backward_with(tensor *out, tensor *grad_out) {
    const char *fn = "tensor_backward_with";
    if (!out) { tensor__null_arg(fn, "out"); return -1; }
    if (!out->requires_grad || !out->grad_fn) { tensor__fail(fn, "the tensor does not require grad and has no graph"); return -1; }
    if (grad_out && !tensor__same_shape(out, grad_out)) {
        tensor__fail(fn, "grad_out of shape %s does not match the output shape %s", tensor__shape_of(grad_out), tensor__shape_of(out));
        return -1;
    }
    if (!grad_out && tensor__numel_of(out->ndim, out->shape) != 1) {
        tensor__fail(fn, "grad_out can be omitted only for one-element outputs, not shape %s", tensor__shape_of(out));
        return -1;
    }
    return tensor__run_backward(fn, 1, &out, &grad_out, false, true, 0, NULL, NULL);
}

TENSOR_API int tensor_backward(tensor *loss) {
    const char *fn = "tensor_backward";
    if (!loss) { tensor__null_arg(fn, "loss"); return -1; }
    if (tensor__numel_of(loss->ndim, loss->shape) != 1) { tensor__fail(fn, "loss must have one element, got shape %s (use tensor_backward_with)", tensor__shape_of(loss)); return -1; }
    if (!loss->requires_grad || !loss->grad_fn) { tensor__fail(fn, "the loss does not require grad and has no graph"); return -1; }
    return tensor__run_backward(fn, 1, &loss, NULL, false, true, 0, NULL, NULL) ;
}

TENSOR_API int tensor_autograd_grad(int n_out, tensor *const *outputs, tensor *const *grad_outputs,
                                    int n_in, tensor *const *inputs, tensor **grads_out, bool create_graph) {
    const char *fn = "tensor_autograd_grad";
    if (n_out <= 0 || n_in <= 0 || !outputs || !inputs || !grads_out) { tensor__fail(fn, "needs n_out > 0 outputs, n_in > 0 inputs and grads_out"); return -1; }
    for (int i = 0; i < n_in; i++) grads_out[i] = NULL;
    tensor__node *wanted[64];
    if (n_in > 64) { tensor__fail(fn, "at most 64 inputs, got %d", n_in); return -1; }
    for (int i = 0; i < n_in; i++) {
        if (!inputs[i]) { tensor__null_arg(fn, "inputs[i]"); return -1; }
        if (!inputs[i]->requires_grad) { tensor__fail(fn, "input %d does not require grad", i); return -1; }
        if (!(wanted[i] = tensor__grad_edge(inputs[i]))) { tensor__fail(fn, "out of memory making the gradient accumulator of input %d", i); return -1; }
    }
    for (int i = 0; i < n_out; i++) {
        if (!outputs[i]) { tensor__null_arg(fn, "outputs[i]"); return -1; }
        if (!outputs[i]->requires_grad || !outputs[i]->grad_fn) { tensor__fail(fn, "output %d does not require grad", i); return -1; }
        tensor *go = grad_outputs ? grad_outputs[i] : NULL;
        if (go && !tensor__same_shape(go, outputs[i])) { tensor__fail(fn, "grad_outputs[%d] has shape %s, output has %s", i, tensor__shape_of(go), tensor__shape_of(outputs[i])); return -1; }
        if (!go && tensor__numel_of(outputs[i]->ndim, outputs[i]->shape) != 1) { tensor__fail(fn, "grad_outputs[%d] is needed for the output of shape %s", i, tensor__shape_of(outputs[i])); return -1; }
    }
    int rc = tensor__run_backward(fn, n_out, outputs, grad_outputs ? grad_outputs : NULL, create_graph, false, n_in, wanted, grads_out);
    for (int i = 0; i < n_in && !rc; i++) {
        if (!grads_out[i]) rc = (grads_out[i] = tensor__full_on(inputs[i]->ndim, inputs[i]->shape, 0, inputs[i]->dtype, inputs[i]->storage->device)) ? 0 : -1; /* unreachable input: zeros */
        else tensor__make_owned(grads_out[i]);
    }
    for (int i = 0; i < n_in && rc; i++) { tensor_free(grads_out[i]); grads_out[i] = NULL; }
    return rc;
}

// >>derivatives --------------------------------------------------------------------------------
/* Each derivative gets the node n (n->saved[i] is input i, n->p / n->ip / n->dims the parameters)
   and g, the gradient of the output; it sets grads[i] for the inputs. It runs inside a scope, so
   intermediates need no freeing, and with the engine's grad mode, so create_graph records it. The
   engine reduces each grads[i] to its input's shape and dtype (broadcasting, promotion). */
#define TENSOR__X (n->saved[0])
#define TENSOR__Y (n->saved[1])
#define TENSOR__OK(t) ((t) != NULL ? 0 : 1)

/* d out / d x for unary ops: grads[0] = g * (FORMULA written with x). */
#define TENSOR__DERIV_UNARY(name, LOCAL_DERIVATIVE)                                                        \
    static int tensor__derivative_##name(tensor__node *n, tensor *g, tensor **grads) {                   \
        tensor *x = TENSOR__X;                                                                           \
        (void)x;                                                                                         \
        grads[0] = (LOCAL_DERIVATIVE);                                                                   \
        return TENSOR__OK(grads[0]);                                                                     \
    }

/* The same, trying the fused one-pass kernel of >>elementwise first when no graph is being built. */
#define TENSOR__DERIV_UNARY_FUSED(name, LOCAL_DERIVATIVE)                                                  \
    static int tensor__derivative_##name(tensor__node *n, tensor *g, tensor **grads) {                   \
        tensor *x = TENSOR__X;                                                                           \
        int fused = tensor__no_grad ? tensor__unary_backward(TENSOR_OP_##name, x, g, n->p[0], n->p[1], &grads[0]) : 0; \
        if (fused) return fused < 0;                                                                     \
        grads[0] = (LOCAL_DERIVATIVE);                                                                   \
        return TENSOR__OK(grads[0]);                                                                     \
    }

static tensor *tensor__mask_float(tensor *mask, tensor *like) { return tensor_to_dtype(mask, like->dtype); }
/* 1 - t */
static tensor *tensor__one_minus(tensor *t) { return tensor_add_scalar(tensor_neg(t), 1); }
/* x OP s for a comparison op, s a wrapped scalar (bool result). */
static tensor *tensor__sigmoid_grad(tensor *g, tensor *s) { return tensor_mul(g, tensor_mul(s, tensor__one_minus(s))); }
/* d/dx x Phi(x) = Phi(x) + x phi(x) */
static tensor *tensor__gelu_grad(tensor *x) {
    tensor *cdf = tensor_mul_scalar(tensor_add_scalar(tensor_erf(tensor_mul_scalar(x, 0.70710678118654752440)), 1), 0.5);
    tensor *pdf = tensor_mul_scalar(tensor_exp(tensor_mul_scalar(tensor_square(x), -0.5)), 0.39894228040143267794);
    return tensor_add(cdf, tensor_mul(x, pdf));
}
/* u = k (x + c x^3), t = tanh(u): 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2) */
static tensor *tensor__gelu_tanh_grad(tensor *x) {
    const double k = 0.79788456080286535588, c = 0.044715;
    tensor *x2 = tensor_square(x);
    tensor *t = tensor_tanh(tensor_mul_scalar(tensor_mul(x, tensor_add_scalar(tensor_mul_scalar(x2, c), 1)), k));
    tensor *left = tensor_mul_scalar(tensor_add_scalar(t, 1), 0.5);
    tensor *right = tensor_mul(tensor_mul_scalar(tensor_mul(x, tensor__one_minus(tensor_square(t))), 0.5 * k), tensor_add_scalar(tensor_mul_scalar(x2, 3 * c), 1));
    return tensor_add(left, right);
}
/* d/dx x s(x) = s (1 + x (1 - s)) */
static tensor *tensor__silu_grad(tensor *x) {
    tensor *sg = tensor_sigmoid(x);
    return tensor_mul(sg, tensor_add_scalar(tensor_mul(x, tensor__one_minus(sg)), 1));
}
/* d/dx x tanh(softplus(x)) = tsp + x (1 - tsp^2) sigmoid(x) */
static tensor *tensor__mish_grad(tensor *x) {
    tensor *tsp = tensor_tanh(tensor_softplus(x));
    return tensor_add(tsp, tensor_mul(tensor_mul(x, tensor__one_minus(tensor_square(tsp))), tensor_sigmoid(x)));
}

TENSOR__DERIV_UNARY(neg, tensor_neg(g))
TENSOR__DERIV_UNARY(abs, tensor_mul(g, tensor_sign(x)))
TENSOR__DERIV_UNARY(sign, tensor_mul_scalar(g, 0))
TENSOR__DERIV_UNARY(sqrt, tensor_div(tensor_mul_scalar(g, 0.5), tensor_sqrt(x)))
TENSOR__DERIV_UNARY(rsqrt, tensor_mul(tensor_mul_scalar(g, -0.5), tensor_div(tensor_rsqrt(x), x)))
TENSOR__DERIV_UNARY(square, tensor_mul(g, tensor_mul_scalar(x, 2)))
TENSOR__DERIV_UNARY(reciprocal, tensor_neg(tensor_div(g, tensor_square(x))))
TENSOR__DERIV_UNARY_FUSED(exp, tensor_mul(g, tensor_exp(x)))
TENSOR__DERIV_UNARY(exp2, tensor_mul(g, tensor_mul_scalar(tensor_exp2(x), 0.69314718055994530942)))
TENSOR__DERIV_UNARY(expm1, tensor_mul(g, tensor_exp(x)))
TENSOR__DERIV_UNARY(log, tensor_div(g, x))
TENSOR__DERIV_UNARY(log2, tensor_div(g, tensor_mul_scalar(x, 0.69314718055994530942)))
TENSOR__DERIV_UNARY(log1p, tensor_div(g, tensor_add_scalar(x, 1)))
TENSOR__DERIV_UNARY(sin, tensor_mul(g, tensor_cos(x)))
TENSOR__DERIV_UNARY(cos, tensor_neg(tensor_mul(g, tensor_sin(x))))
TENSOR__DERIV_UNARY(tan, tensor_mul(g, tensor_add_scalar(tensor_square(tensor_tan(x)), 1)))
TENSOR__DERIV_UNARY(asin, tensor_mul(g, tensor_rsqrt(tensor__one_minus(tensor_square(x)))))
TENSOR__DERIV_UNARY(acos, tensor_neg(tensor_mul(g, tensor_rsqrt(tensor__one_minus(tensor_square(x))))))
TENSOR__DERIV_UNARY(atan, tensor_div(g, tensor_add_scalar(tensor_square(x), 1)))
TENSOR__DERIV_UNARY(sinh, tensor_mul(g, tensor_cosh(x)))
TENSOR__DERIV_UNARY(cosh, tensor_mul(g, tensor_sinh(x)))
TENSOR__DERIV_UNARY_FUSED(tanh, tensor_mul(g, tensor__one_minus(tensor_square(tensor_tanh(x)))))
TENSOR__DERIV_UNARY(asinh, tensor_mul(g, tensor_rsqrt(tensor_add_scalar(tensor_square(x), 1))))
TENSOR__DERIV_UNARY(acosh, tensor_mul(g, tensor_rsqrt(tensor_sub_scalar(tensor_square(x), 1))))
TENSOR__DERIV_UNARY(atanh, tensor_div(g, tensor__one_minus(tensor_square(x))))
TENSOR__DERIV_UNARY_FUSED(sigmoid, tensor__sigmoid_grad(g, tensor_sigmoid(x)))
TENSOR__DERIV_UNARY(logsigmoid, tensor_mul(g, tensor_sigmoid(tensor_neg(x))))
/* relu: PyTorch's threshold_backward, x <= 0 ? 0 : g (a NaN x passes g; an infinite g at x <= 0
   gives 0). Without create_graph (grad mode off here) the fused kernel of >>nn does it in one pass;
   with create_graph, and under the reference kernels, masked_fill computes the same values. */
static int tensor__derivative_relu(tensor__node *n, tensor *g, tensor **grads) {
    int fused = tensor__no_grad ? tensor__relu_backward("tensor_backward", TENSOR__X, g, &grads[0]) : 0;
    if (fused) return fused < 0;
    return TENSOR__OK(grads[0] = tensor_masked_fill(g, tensor__op_scalar(TENSOR_OP_le, TENSOR__X, 0), 0));
}
TENSOR__DERIV_UNARY_FUSED(relu6, tensor_mul(g, tensor__mask_float(tensor_logical_and(tensor__op_scalar(TENSOR_OP_gt, x, 0), tensor__op_scalar(TENSOR_OP_lt, x, 6)), g)))
TENSOR__DERIV_UNARY_FUSED(gelu, tensor_mul(g, tensor__gelu_grad(x)))
TENSOR__DERIV_UNARY_FUSED(gelu_tanh, tensor_mul(g, tensor__gelu_tanh_grad(x)))
TENSOR__DERIV_UNARY_FUSED(silu, tensor_mul(g, tensor__silu_grad(x)))
TENSOR__DERIV_UNARY(mish, tensor_mul(g, tensor__mish_grad(x)))
TENSOR__DERIV_UNARY(softplus, tensor_where(tensor__op_scalar(TENSOR_OP_gt, x, 20), g, tensor_mul(g, tensor_sigmoid(x))))
TENSOR__DERIV_UNARY(erf, tensor_mul(g, tensor_mul_scalar(tensor_exp(tensor_neg(tensor_square(x))), 1.12837916709551257390)))
TENSOR__DERIV_UNARY_FUSED(leaky_relu, tensor_where(tensor__op_scalar(TENSOR_OP_gt, x, 0), g, tensor_mul_scalar(g, n->p[0])))
TENSOR__DERIV_UNARY(elu, tensor_where(tensor__op_scalar(TENSOR_OP_gt, x, 0), g, tensor_mul(g, tensor_mul_scalar(tensor_exp(x), n->p[0]))))
/* hardtanh passes the gradient strictly inside (lo, hi), clamp on [lo, hi] (PyTorch's choice). */
TENSOR__DERIV_UNARY_FUSED(hardtanh, tensor_mul(g, tensor__mask_float(tensor_logical_and(tensor__op_scalar(TENSOR_OP_gt, x, n->p[0]), tensor__op_scalar(TENSOR_OP_lt, x, n->p[1])), g)))
TENSOR__DERIV_UNARY_FUSED(clamp, tensor_mul(g, tensor__mask_float(tensor_logical_and(tensor__op_scalar(TENSOR_OP_ge, x, n->p[0] == n->p[0] ? n->p[0] : -INFINITY),
                                                                              tensor__op_scalar(TENSOR_OP_le, x, n->p[1] == n->p[1] ? n->p[1] : INFINITY)), g)))

/* floor, ceil, round, trunc: in the graph with gradient 0 (PyTorch's zeros_like(grad)) */
TENSOR__DERIV_UNARY(floor, tensor_mul_scalar(g, 0))
TENSOR__DERIV_UNARY(ceil, tensor_mul_scalar(g, 0))
TENSOR__DERIV_UNARY(round, tensor_mul_scalar(g, 0))
TENSOR__DERIV_UNARY(trunc, tensor_mul_scalar(g, 0))

/* ---- the ops PyTorch users reach for: unary (PyTorch's derivatives.yaml formulas) ---- */
/* d/dx sinc(x) = (cos(pi x) pi x - sin(pi x)) / (pi x^2), 0 at x = 0 */
static tensor *tensor__sinc_grad(tensor *g, tensor *x) {
    tensor *px = tensor_mul_scalar(x, 3.14159265358979323846);
    tensor *num = tensor_sub(tensor_mul(px, tensor_cos(px)), tensor_sin(px));
    tensor *d = tensor_div(num, tensor_mul(px, x));
    return tensor_mul(g, tensor_masked_fill(d, tensor__op_scalar(TENSOR_OP_eq, x, 0), 0));
}
/* logit: g / (x (1 - x)); eps None: NaN outside [0, 1]; with eps: 0 outside [eps, 1 - eps] */
static tensor *tensor__logit_grad(tensor *g, tensor *x, double eps) {
    tensor *d = tensor_div(g, tensor_mul(x, tensor__one_minus(x)));
    bool none = eps != eps;
    double lo = none ? 0 : eps, hi = none ? 1 : 1 - eps;
    tensor *out = tensor_logical_or(tensor__op_scalar(TENSOR_OP_lt, x, lo), tensor__op_scalar(TENSOR_OP_gt, x, hi));
    return tensor_masked_fill(d, out, none ? NAN : 0);
}
/* hardswish: 0 below -3, x / 3 + 0.5 on [-3, 3], 1 above */
static tensor *tensor__hardswish_grad(tensor *g, tensor *x) {
    tensor *mid = tensor_masked_fill(tensor_add_scalar(tensor_mul_scalar(x, 1.0 / 3), 0.5), tensor__op_scalar(TENSOR_OP_gt, x, 3), 1);
    return tensor_mul(g, tensor_masked_fill(mid, tensor__op_scalar(TENSOR_OP_lt, x, -3), 0));
}
/* the shrinks: 0 on [-lambd, lambd], g outside */
static tensor *tensor__shrink_grad(tensor *g, tensor *x, double l) {
    tensor *in = tensor_logical_and(tensor__op_scalar(TENSOR_OP_ge, x, -l), tensor__op_scalar(TENSOR_OP_le, x, l));
    return tensor_masked_fill(g, in, 0);
}
TENSOR__DERIV_UNARY(erfc, tensor_mul(g, tensor_mul_scalar(tensor_exp(tensor_neg(tensor_square(x))), -1.12837916709551257390)))
TENSOR__DERIV_UNARY(erfinv, tensor_mul(g, tensor_mul_scalar(tensor_exp(tensor_square(tensor_erfinv(x))), 0.88622692545275801365)))
TENSOR__DERIV_UNARY(lgamma, tensor_mul(g, tensor_digamma(x)))
TENSOR__DERIV_UNARY(digamma, tensor_mul(g, tensor_polygamma(1, x)))
TENSOR__DERIV_UNARY(polygamma, tensor_mul(g, tensor_polygamma((int64_t)n->p[0] + 1, x)))
/* torch.special: entr -(log x + 1); erfcx 2 x erfcx(x) - 2 / sqrt(pi); ndtr the normal density;
   log_ndtr density / ndtr as one exponential; ndtri sqrt(2 pi) exp(ndtri(x)^2 / 2); i0 i1; i0e
   i1e - sign(x) i0e; i1 i0 - i1 / x and i1e i0e - i1e (sign(x) + 1 / x), both 1/2 at 0 */
static tensor *tensor__i1_grad(tensor *g, tensor *x, bool scaled) {
    tensor *i1 = scaled ? tensor_special_i1e(x) : tensor_special_i1(x);
    tensor *d = tensor_sub(scaled ? tensor_special_i0e(x) : tensor_i0(x), tensor_div(i1, x));
    if (scaled) d = tensor_sub(d, tensor_mul(i1, tensor_sign(x)));
    return tensor_mul(g, tensor_masked_fill(d, tensor__op_scalar(TENSOR_OP_eq, x, 0), 0.5));
}
TENSOR__DERIV_UNARY(special_entr, tensor_mul(g, tensor_neg(tensor_add_scalar(tensor_log(x), 1))))
TENSOR__DERIV_UNARY(special_erfcx, tensor_mul(g, tensor_add_scalar(tensor_mul_scalar(tensor_mul(x, tensor_special_erfcx(x)), 2), -1.12837916709551257390)))
TENSOR__DERIV_UNARY(special_ndtr, tensor_mul(g, tensor_mul_scalar(tensor_exp(tensor_mul_scalar(tensor_square(x), -0.5)), 0.39894228040143267794)))
TENSOR__DERIV_UNARY(special_log_ndtr, tensor_mul(g, tensor_mul_scalar(tensor_exp(tensor_sub(tensor_mul_scalar(tensor_square(x), -0.5), tensor_special_log_ndtr(x))), 0.39894228040143267794)))
TENSOR__DERIV_UNARY(special_ndtri, tensor_mul(g, tensor_mul_scalar(tensor_exp(tensor_mul_scalar(tensor_square(tensor_special_ndtri(x)), 0.5)), 2.50662827463100050242)))
TENSOR__DERIV_UNARY(i0, tensor_mul(g, tensor_special_i1(x)))
TENSOR__DERIV_UNARY(special_i0e, tensor_mul(g, tensor_sub(tensor_special_i1e(x), tensor_mul(tensor_sign(x), tensor_special_i0e(x)))))
TENSOR__DERIV_UNARY(special_i1, tensor__i1_grad(g, x, false))
TENSOR__DERIV_UNARY(special_i1e, tensor__i1_grad(g, x, true))
TENSOR__DERIV_UNARY(sinc, tensor__sinc_grad(g, x))
TENSOR__DERIV_UNARY(deg2rad, tensor_mul_scalar(g, 0.017453292519943295769))
TENSOR__DERIV_UNARY(rad2deg, tensor_mul_scalar(g, 57.295779513082320877))
TENSOR__DERIV_UNARY(frac, tensor__alias("tensor_backward", g))
TENSOR__DERIV_UNARY(log10, tensor_div(g, tensor_mul_scalar(x, 2.30258509299404568402)))
TENSOR__DERIV_UNARY(hardswish, tensor__hardswish_grad(g, x))
TENSOR__DERIV_UNARY(hardsigmoid, tensor_mul_scalar(tensor_mul(g, tensor__mask_float(tensor_logical_and(tensor__op_scalar(TENSOR_OP_gt, x, -3), tensor__op_scalar(TENSOR_OP_lt, x, 3)), g)), 1.0 / 6))
TENSOR__DERIV_UNARY(selu, tensor_where(tensor__op_scalar(TENSOR_OP_gt, x, 0), tensor_mul_scalar(g, 1.05070098735548049342),
                                       tensor_mul(g, tensor_mul_scalar(tensor_exp(x), 1.05070098735548049342 * 1.67326324235437728482))))
TENSOR__DERIV_UNARY(softsign, tensor_div(g, tensor_square(tensor_add_scalar(tensor_abs(x), 1))))
TENSOR__DERIV_UNARY(tanhshrink, tensor_mul(g, tensor_square(tensor_tanh(x))))
TENSOR__DERIV_UNARY(logit, tensor__logit_grad(g, x, n->p[0]))
TENSOR__DERIV_UNARY(celu, tensor_where(tensor__op_scalar(TENSOR_OP_gt, x, 0), g, tensor_mul(g, tensor_exp(tensor_mul_scalar(x, 1 / n->p[0])))))
TENSOR__DERIV_UNARY(hardshrink, tensor__shrink_grad(g, x, n->p[0]))
TENSOR__DERIV_UNARY(softshrink, tensor__shrink_grad(g, x, n->p[0]))
TENSOR__DERIV_UNARY(threshold, tensor_masked_fill(g, tensor__op_scalar(TENSOR_OP_le, x, n->p[0]), 0))

/* Binary ops: grads[0] for a, grads[1] for b (the engine sums broadcast dims away). */
#define TENSOR__DERIV_BINARY(name, GRAD_A, GRAD_B)                                                         \
    static int tensor__derivative_##name(tensor__node *n, tensor *g, tensor **grads) {                   \
        tensor *x = TENSOR__X, *y = TENSOR__Y;                                                           \
        (void)x; (void)y;                                                                                \
        if (n->next[0] && !(grads[0] = (GRAD_A))) return 1;                                              \
        if (n->next[1] && !(grads[1] = (GRAD_B))) return 1;                                              \
        return 0;                                                                                        \
    }

/* pow: d/da = b a^(b-1), taken as 0 where b == 0 (PyTorch; b a^(b-1) would be 0 * inf at a == 0);
   d/db = a^b log a, taken as 0 where a == 0 and b >= 0 (PyTorch). A wrapped-number operand
   (pow_scalar's exponent, a CPU 0-dim tensor) gives a CPU mask: it goes to the gradient's device. */
static tensor *tensor__pow_grad_base(tensor *g, tensor *x, tensor *y) {
    tensor *v = tensor_mul(g, tensor_mul(y, tensor_pow(x, tensor_sub_scalar(y, 1))));
    return v ? tensor_masked_fill(v, tensor__on(tensor__op_scalar(TENSOR_OP_eq, y, 0), v->storage->device), 0) : NULL;
}
static tensor *tensor__pow_grad_exponent(tensor *g, tensor *x, tensor *y) {
    tensor *v = tensor_mul(g, tensor_mul(tensor_pow(x, y), tensor_log(x)));
    tensor *zero_base = tensor_logical_and(tensor__op_scalar(TENSOR_OP_eq, x, 0), tensor__op_scalar(TENSOR_OP_ge, y, 0));
    return v ? tensor_masked_fill(v, tensor__on(zero_base, v->storage->device), 0) : NULL;
}
/* maximum/minimum: x gets the gradient unless it loses, half of it on a tie (PyTorch; so where
   either is NaN both get all of it). */
static tensor *tensor__extreme_grad(tensor *g, tensor *x, tensor *y, tensor_op loses) {
    tensor *keep = tensor__mask_float(tensor_logical_not(tensor__binary(loses, x, y)), g), *tie = tensor__mask_float(tensor_eq(x, y), g);
    return tensor_mul(g, tensor_sub(keep, tensor_mul_scalar(tie, 0.5)));
}

TENSOR__DERIV_BINARY(add, tensor__alias("tensor_backward", g), tensor__alias("tensor_backward", g))
TENSOR__DERIV_BINARY(sub, tensor__alias("tensor_backward", g), tensor_neg(g))
TENSOR__DERIV_BINARY(mul, tensor_mul(g, y), tensor_mul(g, x))
TENSOR__DERIV_BINARY(div, tensor_div(g, y), tensor_neg(tensor_div(tensor_mul(g, x), tensor_square(y))))
TENSOR__DERIV_BINARY(pow, tensor__pow_grad_base(g, x, y), tensor__pow_grad_exponent(g, x, y))
TENSOR__DERIV_BINARY(maximum, tensor__extreme_grad(g, x, y, TENSOR_OP_lt), tensor__extreme_grad(g, y, x, TENSOR_OP_lt))
TENSOR__DERIV_BINARY(minimum, tensor__extreme_grad(g, x, y, TENSOR_OP_gt), tensor__extreme_grad(g, y, x, TENSOR_OP_gt))
TENSOR__DERIV_BINARY(atan2, tensor_div(tensor_mul(g, y), tensor_add(tensor_square(x), tensor_square(y))),
                     tensor_neg(tensor_div(tensor_mul(g, x), tensor_add(tensor_square(x), tensor_square(y)))))
TENSOR__DERIV_BINARY(fmod, tensor__alias("tensor_backward", g), tensor_neg(tensor_mul(g, tensor_trunc(tensor_div(x, y)))))

/* ---- the ops PyTorch users reach for: binary ---- */
/* copysign: d/da = copysign(a, b) / a, 0 where a == 0; d/db = 0 */
static tensor *tensor__copysign_grad(tensor *g, tensor *x, tensor *y) {
    tensor *ratio = tensor_div(tensor_copysign(x, y), x);
    return tensor_mul(g, tensor_masked_fill(ratio, tensor__op_scalar(TENSOR_OP_eq, x, 0), 0));
}
/* fmax/fmin: a gets g where it wins, ties included, or b is NaN; b gets the rest (PyTorch) */
static tensor *tensor__fext_grad(tensor *g, tensor *x, tensor *y, tensor_op wins, bool for_a) {
    tensor *a_gets = tensor_logical_or(tensor__binary(wins, x, y), tensor_isnan(y));
    return tensor_masked_fill(g, for_a ? tensor_logical_not(a_gets) : a_gets, 0);
}
/* xlogy: d/da = log(b), 0 where a == 0 and b <= 0; d/db = a / b. xlog1py the same with log1p, b + 1. */
static tensor *tensor__xlogy_grad_a(tensor *g, tensor *x, tensor *y, bool one_p) {
    tensor *d = one_p ? tensor_xlog1py(g, y) : tensor_xlogy(g, y);
    tensor *m = tensor_logical_and(tensor__op_scalar(TENSOR_OP_eq, x, 0), tensor__op_scalar(TENSOR_OP_le, y, one_p ? -1 : 0));
    return tensor_masked_fill(d, m, 0);
}
static tensor *tensor__to_f64(tensor *t) { return tensor_to_dtype(t, TENSOR_F64); }
TENSOR__DERIV_BINARY(hypot, tensor_div(tensor_mul(g, x), tensor_hypot(x, y)), tensor_div(tensor_mul(g, y), tensor_hypot(x, y)))
TENSOR__DERIV_BINARY(logaddexp, tensor_div(g, tensor_add_scalar(tensor_exp(tensor_sub(y, x)), 1)), tensor_div(g, tensor_add_scalar(tensor_exp(tensor_sub(x, y)), 1)))
TENSOR__DERIV_BINARY(logaddexp2, tensor_div(g, tensor_add_scalar(tensor_exp2(tensor_sub(y, x)), 1)), tensor_div(g, tensor_add_scalar(tensor_exp2(tensor_sub(x, y)), 1)))
TENSOR__DERIV_BINARY(copysign, tensor__copysign_grad(g, x, y), tensor_mul_scalar(g, 0))
TENSOR__DERIV_BINARY(remainder, tensor__alias("tensor_backward", g), tensor_neg(tensor_mul(g, tensor_floor_divide(x, y))))
TENSOR__DERIV_BINARY(fmax, tensor__fext_grad(g, x, y, TENSOR_OP_ge, true), tensor__fext_grad(g, x, y, TENSOR_OP_ge, false))
TENSOR__DERIV_BINARY(fmin, tensor__fext_grad(g, x, y, TENSOR_OP_le, true), tensor__fext_grad(g, x, y, TENSOR_OP_le, false))
TENSOR__DERIV_BINARY(xlogy, tensor__xlogy_grad_a(g, x, y, false), tensor_div(tensor_mul(g, x), y))
TENSOR__DERIV_BINARY(xlog1py, tensor__xlogy_grad_a(g, x, y, true), tensor_div(tensor_mul(g, x), tensor_add_scalar(y, 1)))
TENSOR__DERIV_BINARY(float_power, tensor__pow_grad_base(g, tensor__to_f64(x), tensor__to_f64(y)), tensor__pow_grad_exponent(g, tensor__to_f64(x), tensor__to_f64(y)))
/* special_zeta(s, q): d/dq = -s zeta(s + 1, q); d/ds is not implemented (PyTorch raises too) */
static int tensor__derivative_special_zeta(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = TENSOR__X, *y = TENSOR__Y;
    if (n->next[0]) return (tensor__fail("tensor_backward", "the derivative of special_zeta with respect to its first argument is not implemented (as in PyTorch)"), 1);
    if (n->next[1] && !(grads[1] = tensor_mul(g, tensor_mul(tensor_neg(x), tensor_special_zeta(tensor_add_scalar(x, 1), y))))) return 1;
    return 0;
}
TENSOR__DERIV_BINARY(ldexp, tensor_mul(g, tensor_exp2(y)), tensor_mul(g, tensor_mul_scalar(tensor_mul(x, tensor_exp2(y)), 0.69314718055994530942)))

static int tensor__derivative_where(tensor__node *n, tensor *g, tensor **grads) {
    tensor *cond = n->saved[0];
    if (n->next[1] && !(grads[1] = tensor_masked_fill(g, tensor_logical_not(cond), 0))) return 1;
    if (n->next[2] && !(grads[2] = tensor_masked_fill(g, cond, 0))) return 1;
    return 0;
}

/* Copies and conversions pass the gradient through (the engine converts it to the input's dtype). */
static int tensor__derivative_pass(tensor__node *n, tensor *g, tensor **grads) {
    (void)n;
    grads[0] = tensor__alias("tensor_backward", g);
    return TENSOR__OK(grads[0]);
}
static int tensor__derivative_clone(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_pass(n, g, grads); }
static int tensor__derivative_contiguous(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_pass(n, g, grads); }
static int tensor__derivative_to_dtype(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_pass(n, g, grads); }
static int tensor__derivative_to_device(tensor__node *n, tensor *g, tensor **grads) {
    grads[0] = tensor_to_device(g, n->saved[0]->storage->device);
    return TENSOR__OK(grads[0]);
}

/* ---- reductions: n->dims[0..n_dims) are the reduced dims (wrapped, ascending; none for a 0-dim
   input), n->ip[0] is keepdim, n->ip[1] the correction of var/std, n->p[0] the p of norm. ---- */

/* A reduced tensor (g, or a statistic) brought back to broadcast against x: the reduced dims
   reinserted as size 1 when keepdim was false. */
static tensor *tensor__unsqueeze_reduced(tensor__node *n, tensor *r) {
    if (n->ip[0]) return tensor__alias("tensor_backward", r);
    tensor *u = tensor__alias("tensor_backward", r);
    for (int i = 0; i < n->n_dims && u; i++) u = tensor_unsqueeze(u, n->dims[i]); /* ascending: positions are final */
    return u;
}
/* g expanded back to x's shape. */
static tensor *tensor__unreduce(tensor__node *n, tensor *g) {
    tensor *x = TENSOR__X;
    return tensor_expand(tensor__unsqueeze_reduced(n, g), x->ndim, x->shape);
}
static double tensor__reduced_count(tensor__node *n) {
    double c = 1;
    for (int i = 0; i < n->n_dims; i++) c *= (double)TENSOR__X->shape[n->dims[i]];
    return c;
}
/* The reduction re-run with keepdim, for derivatives that need its value (a 0-dim input has no
   reduced dim: dim 0 then reduces its one element, so norm gives |x| and std 0, not x). */
static tensor *tensor__keep_stat(tensor__node *n, tensor_op op) {
    tensor *x = TENSOR__X;
    int d = n->n_dims ? n->dims[0] : 0;
    switch (op) {
    case TENSOR_OP_mean: return tensor_mean_dims(x, n->n_dims, n->dims, true);
    case TENSOR_OP_logsumexp: return tensor_logsumexp(x, d, true);
    case TENSOR_OP_std: return tensor_std(x, d, n->ip[1], true);
    case TENSOR_OP_norm: return tensor__reduce(TENSOR_OP_norm, x, n->n_dims, n->dims, true, n->p[0], 0); /* every reduced dim (linalg_vector_norm reduces several) */
    case TENSOR_OP_prod: return tensor_prod(x, d, true);
    default: return tensor__fail("tensor_backward", "no statistic for %s", tensor__ops[op].fn);
    }
}

static int tensor__derivative_sum(tensor__node *n, tensor *g, tensor **grads) { return TENSOR__OK(grads[0] = tensor__unreduce(n, g)); }
static int tensor__derivative_sum_all(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_sum(n, g, grads); }
static int tensor__derivative_sum_dims(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_sum(n, g, grads); }
static int tensor__derivative_mean(tensor__node *n, tensor *g, tensor **grads) {
    return TENSOR__OK(grads[0] = tensor_div_scalar(tensor__unreduce(n, g), tensor__reduced_count(n)));
}
static int tensor__derivative_mean_all(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_mean(n, g, grads); }
static int tensor__derivative_mean_dims(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_mean(n, g, grads); }

/* prod: d/dx_i = prod of the others. Where x_i == 0 that is the product of the non-zeros if x_i is
   the only zero of its slice, else 0; elsewhere it is prod / x_i. */
static int tensor__derivative_prod(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = TENSOR__X;
    if (x->ndim == 0) return TENSOR__OK(grads[0] = tensor__alias("tensor_backward", g));
    int d = n->dims[0];
    tensor *is_zero = tensor__op_scalar(TENSOR_OP_eq, x, 0);
    tensor *prod = tensor__keep_stat(n, TENSOR_OP_prod);
    tensor *prod_nonzero = tensor_prod(tensor_masked_fill(x, is_zero, 1), d, true);
    tensor *zeros_in_slice = tensor_sum(is_zero, d, true);
    tensor *at_zero = tensor_masked_fill(prod_nonzero, tensor_logical_not(tensor__op_scalar(TENSOR_OP_eq, zeros_in_slice, 1)), 0);
    tensor *others = tensor_where(is_zero, tensor_expand(at_zero, x->ndim, x->shape), tensor_div(prod, tensor_masked_fill(x, is_zero, 1)));
    return TENSOR__OK(grads[0] = tensor_mul(tensor__unreduce(n, g), others));
}

/* max/min over a dim: the gradient goes to the index the reduction picked (the first extreme). */
static int tensor__derivative_extreme_dim(tensor__node *n, tensor *g, tensor **grads, bool is_max) {
    tensor *x = TENSOR__X;
    if (x->ndim == 0) return TENSOR__OK(grads[0] = tensor__alias("tensor_backward", g));
    int d = n->dims[0];
    tensor *idx = is_max ? tensor_argmax(x, d, true) : tensor_argmin(x, d, true);
    tensor *zeros = tensor__full_on(x->ndim, x->shape, 0, g->dtype, g->storage->device);
    return TENSOR__OK(grads[0] = tensor_scatter_add(zeros, d, idx, tensor__unsqueeze_reduced(n, g)));
}
static int tensor__derivative_max(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_extreme_dim(n, g, grads, true); }
static int tensor__derivative_min(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_extreme_dim(n, g, grads, false); }
/* max/min of everything: ties share the gradient evenly (PyTorch). */
static int tensor__derivative_extreme_all(tensor__node *n, tensor *g, tensor **grads, bool is_max) {
    tensor *x = TENSOR__X;
    tensor *m = is_max ? tensor_max_all(x) : tensor_min_all(x);
    tensor *hit = tensor__mask_float(tensor_eq(x, m), g);
    return TENSOR__OK(grads[0] = tensor_mul(tensor_div(hit, tensor_sum_all(hit)), g));
}
static int tensor__derivative_max_all(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_extreme_all(n, g, grads, true); }
static int tensor__derivative_min_all(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_extreme_all(n, g, grads, false); }

/* var: 2 (x - mean) / (N - correction); std: (x - mean) / ((N - correction) std), taken as 0 where
   std is 0 (PyTorch's choice at that kink). */
static int tensor__derivative_var(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = TENSOR__X;
    double denom = tensor__reduced_count(n) - (double)n->ip[1];
    tensor *centered = tensor_sub(x, tensor__keep_stat(n, TENSOR_OP_mean));
    return TENSOR__OK(grads[0] = tensor_mul(tensor__unreduce(n, g), tensor_mul_scalar(centered, 2.0 / denom)));
}
static int tensor__derivative_std(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = TENSOR__X;
    double denom = tensor__reduced_count(n) - (double)n->ip[1];
    tensor *centered = tensor_sub(x, tensor__keep_stat(n, TENSOR_OP_mean));
    tensor *sd = tensor__keep_stat(n, TENSOR_OP_std), *sd_zero = tensor__op_scalar(TENSOR_OP_eq, sd, 0);
    tensor *scaled = tensor_div(centered, tensor_mul_scalar(tensor_masked_fill(sd, sd_zero, 1), denom));
    return TENSOR__OK(grads[0] = tensor_mul(tensor__unreduce(n, g), tensor_masked_fill(scaled, sd_zero, 0)));
}
/* logsumexp: softmax of x along the dim. */
static int tensor__derivative_logsumexp(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = TENSOR__X;
    return TENSOR__OK(grads[0] = tensor_mul(tensor__unreduce(n, g), tensor_exp(tensor_sub(x, tensor__keep_stat(n, TENSOR_OP_logsumexp)))));
}
/* norm: p = 2: x / |x|; p = 1: sign x; p = 0: 0; p = +-inf: sign x shared among the entries that
   reach the norm; else x |x|^(p-2) / |x|_p^(p-1). A zero norm gives a zero gradient. */
static int tensor__derivative_norm(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = TENSOR__X;
    double p = n->p[0];
    tensor *gu = tensor__unreduce(n, g), *local;
    if (p == 0) local = tensor_mul_scalar(x, 0);
    else if (p == 1) local = tensor_sign(x);
    else {
        tensor *nrm = tensor__keep_stat(n, TENSOR_OP_norm);
        tensor *nrm_zero = tensor__op_scalar(TENSOR_OP_eq, nrm, 0);
        if (isinf(p)) {
            tensor *hit = tensor__mask_float(tensor_eq(tensor_abs(x), nrm), x);
            tensor *count = x->ndim ? tensor_sum_dims(hit, n->n_dims, n->dims, true) : hit;
            local = tensor_div(tensor_mul(tensor_sign(x), hit), count);
        } else if (p == 2) {
            local = tensor_div(x, tensor_masked_fill(nrm, nrm_zero, 1));
        } else {
            tensor *num = tensor_mul(x, tensor_pow_scalar(tensor_abs(x), p - 2));
            local = tensor_div(num, tensor_pow_scalar(tensor_masked_fill(nrm, nrm_zero, 1), p - 1));
        }
        local = tensor_masked_fill(local, nrm_zero, 0);
    }
    return TENSOR__OK(grads[0] = tensor_mul(gu, local));
}
/* cumsum: the reversed cumulative sum of g. */
static int tensor__derivative_cumsum(tensor__node *n, tensor *g, tensor **grads) {
    if (TENSOR__X->ndim == 0) return TENSOR__OK(grads[0] = tensor__alias("tensor_backward", g));
    int d = n->dims[0];
    return TENSOR__OK(grads[0] = tensor_flip(tensor_cumsum(tensor_flip(g, d), d), d));
}

/* ---- sorting and the scans of >>sort (n->dims[0] the dim, none for a 0-dim input) ---- */
/* sort, cummax, cummin: g scattered back through the indices the kernel kept (n->extra); an
   index taken several times (cummax) adds up. */
static int tensor__derivative_scatter_back(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = TENSOR__X;
    if (x->ndim == 0 || !n->extra) return TENSOR__OK(grads[0] = tensor__alias("tensor_backward", g));
    return TENSOR__OK(grads[0] = tensor_scatter_add(tensor__full_on(x->ndim, x->shape, 0, g->dtype, g->storage->device), n->dims[0], n->extra, g));
}
static int tensor__derivative_sort(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_scatter_back(n, g, grads); }
static int tensor__derivative_cummax(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_scatter_back(n, g, grads); }
static int tensor__derivative_cummin(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_scatter_back(n, g, grads); }
/* amax / amin: g shared evenly among the entries equal to the extreme (PyTorch). */
static int tensor__derivative_amax_like(tensor__node *n, tensor *g, tensor **grads, bool is_max) {
    tensor *x = TENSOR__X;
    tensor *m = is_max ? tensor_amax(x, n->n_dims, n->dims, true) : tensor_amin(x, n->n_dims, n->dims, true);
    tensor *hit = tensor__mask_float(tensor_eq(x, m), g);
    tensor *count = tensor_sum_dims(hit, n->n_dims, n->dims, true);
    return TENSOR__OK(grads[0] = tensor_mul(tensor__unreduce(n, g), tensor_div(hit, count)));
}
static int tensor__derivative_amax(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_amax_like(n, g, grads, true); }
static int tensor__derivative_amin(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_amax_like(n, g, grads, false); }
/* The reversed cumulative sum along d. */
static tensor *tensor__rev_cumsum(tensor *t, int d) { return tensor_flip(tensor_cumsum(tensor_flip(t, d), d), d); }
/* cumprod: d out_j / d x_i = prod_{k <= j, k != i} x_k for j >= i. Where x_i != 0 that is
   out_j / x_i, so grad_i = rev_cumsum(g out)_i / x_i (0 past the line's first zero, where every
   out_j is 0). At the first zero f of a line: rev_cumsum(g cp)_f, cp the cumprod with x_f taken
   as 1; at later zeros 0. Written with ops, so it differentiates again. */
static int tensor__derivative_cumprod(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = TENSOR__X;
    if (x->ndim == 0) return TENSOR__OK(grads[0] = tensor__alias("tensor_backward", g));
    int d = n->dims[0];
    tensor *is_zero = tensor__op_scalar(TENSOR_OP_eq, x, 0);
    tensor *first = tensor_logical_and(is_zero, tensor__op_scalar(TENSOR_OP_eq, tensor_cumsum(is_zero, d), 1));
    tensor *out = tensor_cumprod(x, d);
    tensor *a = tensor_div(tensor__rev_cumsum(tensor_mul(g, out), d), tensor_masked_fill(x, is_zero, 1));
    tensor *b = tensor__rev_cumsum(tensor_mul(g, tensor_cumprod(tensor_masked_fill(x, first, 1), d)), d);
    /* the second zero s: x_f times rev_cumsum(g cp2)_s, cp2 with x_f and x_s taken as 1 (0 in value,
       but its derivative by x_f is what a second derivative needs); later zeros: 0 to second order */
    tensor *zeros_so_far = tensor_cumsum(is_zero, d);
    tensor *second = tensor_logical_and(is_zero, tensor__op_scalar(TENSOR_OP_eq, zeros_so_far, 2));
    tensor *xf = tensor_sum(tensor_masked_fill(x, tensor_logical_not(first), 0), d, true);
    tensor *c = tensor__rev_cumsum(tensor_mul(g, tensor_cumprod(tensor_masked_fill(x, tensor_logical_or(first, second), 1), d)), d);
    tensor *later = tensor_logical_and(is_zero, tensor__op_scalar(TENSOR_OP_gt, zeros_so_far, 2));
    tensor *r = tensor_where(second, tensor_mul(xf, c), tensor_where(first, b, a));
    return TENSOR__OK(grads[0] = tensor_masked_fill(r, later, 0));
}
/* logcumsumexp: grad_i = sum_{j >= i} g_j exp(x_i - out_j), in log space with the positive and
   negative parts of g apart (PyTorch's formula): exp(x + rev_logcumsumexp(log|g| - out)). */
static int tensor__derivative_logcumsumexp(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = TENSOR__X;
    if (x->ndim == 0) return TENSOR__OK(grads[0] = tensor__alias("tensor_backward", g));
    int d = n->dims[0];
    tensor *out = tensor_logcumsumexp(x, d), *logabs = tensor_log(tensor_abs(g));
    tensor *part[2];
    for (int k = 0; k < 2; k++) {
        tensor *other = tensor__op_scalar(k == 0 ? TENSOR_OP_le : TENSOR_OP_ge, g, 0); /* not this part's sign */
        tensor *lg = tensor_sub(tensor_masked_fill(logabs, other, -INFINITY), out);
        part[k] = tensor_exp(tensor_add(x, tensor_flip(tensor_logcumsumexp(tensor_flip(lg, d), d), d)));
    }
    return TENSOR__OK(grads[0] = tensor_sub(part[0], part[1]));
}

/* ---- shape and indexing: n->dims[0] is the dim an op works along; see each op for the rest ---- */
static int tensor__derivative_reshape_back(tensor__node *n, tensor *g, tensor **grads) {
    return TENSOR__OK(grads[0] = tensor_reshape(g, TENSOR__X->ndim, TENSOR__X->shape));
}
static int tensor__derivative_view(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_reshape_back(n, g, grads); }
static int tensor__derivative_squeeze(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_reshape_back(n, g, grads); }
static int tensor__derivative_unsqueeze(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_reshape_back(n, g, grads); }
static int tensor__derivative_expand(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_pass(n, g, grads); }
/* permute: n->dims is the permutation; the gradient goes back through its inverse. */
static int tensor__derivative_permute(tensor__node *n, tensor *g, tensor **grads) {
    int inv[TENSOR_MAX_DIMS];
    for (int i = 0; i < n->n_dims; i++) inv[n->dims[i]] = i;
    return TENSOR__OK(grads[0] = tensor_permute(g, n->n_dims, inv));
}
static int tensor__derivative_transpose(tensor__node *n, tensor *g, tensor **grads) {
    return TENSOR__OK(grads[0] = tensor_transpose(g, (int)n->ip[0], (int)n->ip[1]));
}
/* g added into zeros of x's shape at positions start + step * i along dim (scatter_add keeps it
   differentiable in g). idx_len positions; g has the output's shape. */
static tensor *tensor__scatter_back(tensor__node *n, tensor *g, int dim, int64_t start, int64_t step) {
    tensor *x = TENSOR__X;
    if (!g) return NULL; /* select's unsqueeze of g failed */
    int64_t len = g->shape[dim];
    if (tensor__no_grad) { /* no graph to record (no create_graph): g copied straight into its slice of zeros */
        tensor *z = tensor__full_on(x->ndim, x->shape, 0, g->dtype, g->storage->device);
        tensor *part = z ? tensor_slice(z, dim, start, len ? start + step * (len - 1) + 1 : start, step) : NULL;
        return part && tensor_copy_(part, g) ? z : NULL;
    }
    /* len positions (the arange's end falls between the last and the next); none for an empty slice */
    tensor *pos = tensor__on(tensor_arange((double)start, (double)start + (len ? (double)step * (double)len - 0.5 : 0), (double)step, TENSOR_I64), g->storage->device);
    int64_t shape[TENSOR_MAX_DIMS];
    for (int d = 0; d < g->ndim; d++) shape[d] = d == dim ? len : 1;
    tensor *idx = tensor_expand(tensor_reshape(pos, g->ndim, shape), g->ndim, g->shape);
    return tensor_scatter_add(tensor__full_on(x->ndim, x->shape, 0, g->dtype, g->storage->device), dim, idx, g);
}
/* slice: ip[0] the dim, ip[1] the first index taken, ip[3] the step. */
static int tensor__derivative_slice(tensor__node *n, tensor *g, tensor **grads) {
    return TENSOR__OK(grads[0] = tensor__scatter_back(n, g, (int)n->ip[0], n->ip[1], n->ip[3]));
}
/* select: ip[0] the dim, ip[1] the index taken. */
static int tensor__derivative_select(tensor__node *n, tensor *g, tensor **grads) {
    int d = (int)n->ip[0];
    return TENSOR__OK(grads[0] = tensor__scatter_back(n, tensor_unsqueeze(g, d), d, n->ip[1], 1));
}
/* cat: each input gets its slice of g (ip[2] the dim). */
static int tensor__derivative_cat(tensor__node *n, tensor *g, tensor **grads) {
    int d = (int)n->ip[2];
    int64_t at = 0;
    for (int i = 0; i < n->n_in; i++) {
        int64_t len = n->saved[i]->ndim ? n->saved[i]->shape[n->saved[i]->ndim == g->ndim ? d : 0] : 0;
        if (n->saved[i]->ndim != g->ndim) continue; /* a skipped empty 1-D input */
        if (n->next[i] && !(grads[i] = tensor_slice(g, d, at, at + len, 1))) return 1;
        at += len;
    }
    return 0;
}
static int tensor__derivative_flip(tensor__node *n, tensor *g, tensor **grads) { return TENSOR__OK(grads[0] = tensor_flip(g, (int)n->ip[0])); }
/* repeat: n->ip[0..n_dims) are the repeats; g viewed as [r0, s0, r1, s1, ...] summed over the r's. */
static int tensor__derivative_repeat(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = TENSOR__X;
    int nd = n->n_dims, lead = nd - x->ndim, sum_dims[TENSOR_MAX_DIMS];
    if (2 * nd > TENSOR_MAX_DIMS) {
        /* too many dims to interleave: sum the repeats one dim at a time */
        tensor *r = tensor__alias("tensor_backward", g);
        for (int d = nd - 1; d >= 0 && r; d--) {
            int64_t s = d < lead ? 1 : x->shape[d - lead], shape[TENSOR_MAX_DIMS + 1] = {0};
            int k = 0;
            for (int e = 0; e < r->ndim; e++) {
                if (e == d) { shape[k++] = n->ip[d]; shape[k++] = s; } else shape[k++] = r->shape[e];
            }
            if (k > TENSOR_MAX_DIMS) return TENSOR__OK(tensor__fail("tensor_backward", "repeat over %d dims is not differentiable", nd));
            r = tensor_sum(tensor_reshape(r, k, shape), d, false);
        }
        return TENSOR__OK(grads[0] = tensor_reshape(r, x->ndim, x->shape));
    }
    int64_t shape[TENSOR_MAX_DIMS] = {0};
    for (int d = 0; d < nd; d++) {
        shape[2 * d] = n->ip[d];
        shape[2 * d + 1] = d < lead ? 1 : x->shape[d - lead];
        sum_dims[d] = 2 * d;
    }
    tensor *s = tensor_sum_dims(tensor_reshape(g, 2 * nd, shape), nd, sum_dims, false);
    return TENSOR__OK(grads[0] = tensor_reshape(s, x->ndim, x->shape));
}
/* pad: n->ip[0] is npad, n->pads the pads; padding by the negated pads crops g back. */
static int tensor__derivative_pad(tensor__node *n, tensor *g, tensor **grads) {
    int64_t pads[2 * TENSOR_MAX_DIMS];
    int np = (int)n->ip[0];
    for (int i = 0; i < np; i++) pads[i] = -n->pads[i];
    return TENSOR__OK(grads[0] = tensor_pad(g, np, pads, 0));
}
static int tensor__derivative_tril(tensor__node *n, tensor *g, tensor **grads) { return TENSOR__OK(grads[0] = tensor_tril(g, n->ip[0])); }
static int tensor__derivative_triu(tensor__node *n, tensor *g, tensor **grads) { return TENSOR__OK(grads[0] = tensor_triu(g, n->ip[0])); }
/* as_strided, unfold, diagonal (>>construct): the same view taken of x's flat positions says
   where each element of g came from; g is summed into zeros of x's shape there (scatter_add, so
   differentiable in g). as_strided: the input was contiguous (its front-end checks), so storage
   position x->offset + p is x's element p. */
static int tensor__derivative_view_back(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = TENSOR__X, *pos = tensor__positions(x->ndim, x->shape), *idx = NULL;
    if (pos) {
        switch (n->op) {
        case TENSOR_OP_as_strided: idx = tensor_as_strided(pos, n->n_dims, n->ip, n->ip + 8, (int64_t)n->p[0]); break;
        case TENSOR_OP_unfold: idx = tensor_unfold(pos, (int)n->ip[0], n->ip[1], n->ip[2]); break;
        default: idx = tensor_diagonal(pos, n->ip[0], (int)n->ip[1], (int)n->ip[2]); break;
        }
    }
    grads[0] = tensor__scatter_positions("tensor_backward", x->ndim, x->shape, idx, g);
    tensor_free(idx);
    tensor_free(pos);
    return TENSOR__OK(grads[0]);
}
static int tensor__derivative_as_strided(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_view_back(n, g, grads); }
static int tensor__derivative_unfold(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_view_back(n, g, grads); }
static int tensor__derivative_diagonal(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_view_back(n, g, grads); }
/* gather(t, dim, index): g scattered back. */
static int tensor__derivative_gather(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = TENSOR__X;
    return TENSOR__OK(grads[0] = tensor_scatter_add(tensor__full_on(x->ndim, x->shape, 0, g->dtype, g->storage->device), (int)n->ip[0], n->saved[1], g));
}
/* scatter_add(t, dim, index, src): t gets g, src gets g gathered at index; where src is larger
   than index its part outside index was not used (zeros padded after). */
static int tensor__derivative_scatter_add(tensor__node *n, tensor *g, tensor **grads) {
    tensor *index = n->saved[1], *src = n->saved[2];
    if (n->next[0] && !(grads[0] = tensor__alias("tensor_backward", g))) return 1;
    if (!n->next[2]) return 0;
    if (tensor__numel_of(index->ndim, index->shape) == 0) return TENSOR__OK(grads[2] = tensor__full_on(src->ndim, src->shape, 0, g->dtype, g->storage->device));
    tensor *gs = tensor_gather(g, (int)n->ip[0], index);
    int64_t pads[2 * TENSOR_MAX_DIMS], ishape[TENSOR_MAX_DIMS];
    bool same = true;
    for (int d = 0; d < src->ndim; d++) ishape[d] = index->ndim ? index->shape[d] : 1; /* a 0-dim index counts as [1] */
    if (index->ndim != src->ndim) gs = tensor_reshape(gs, src->ndim, ishape);
    for (int k = 0; k < src->ndim; k++) {
        int d = src->ndim - 1 - k;
        pads[2 * k] = 0;
        pads[2 * k + 1] = src->shape[d] - ishape[d];
        same &= pads[2 * k + 1] == 0;
    }
    return TENSOR__OK(grads[2] = same ? gs : tensor_pad(gs, 2 * src->ndim, pads, 0));
}
/* index_select(t, dim, index): g added back at index along dim. */
static int tensor__derivative_index_select(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = TENSOR__X, *index = n->saved[1];
    int d = (int)n->ip[0];
    if (x->ndim == 0) return TENSOR__OK(grads[0] = tensor_reshape(g, 0, NULL));
    int64_t shape[TENSOR_MAX_DIMS];
    for (int i = 0; i < g->ndim; i++) shape[i] = i == d ? g->shape[d] : 1;
    tensor *idx = tensor_expand(tensor_reshape(index, g->ndim, shape), g->ndim, g->shape);
    return TENSOR__OK(grads[0] = tensor_scatter_add(tensor__full_on(x->ndim, x->shape, 0, g->dtype, g->storage->device), d, idx, g));
}
static int tensor__derivative_masked_fill(tensor__node *n, tensor *g, tensor **grads) {
    return TENSOR__OK(grads[0] = tensor_masked_fill(g, n->saved[1], 0));
}
/* embedding(weight [V, D], indices): rows of g added into the rows they came from. */
static int tensor__derivative_embedding(tensor__node *n, tensor *g, tensor **grads) {
    tensor *w = TENSOR__X, *indices = n->saved[1];
    int64_t rows = tensor__numel_of(indices->ndim, indices->shape), d = w->shape[1];
    int64_t gshape[2] = {rows, d}, ishape[2] = {rows, 1};
    tensor *idx = tensor_expand(tensor_reshape(indices, 2, ishape), 2, gshape);
    return TENSOR__OK(grads[0] = tensor_scatter_add(tensor__full_on(2, w->shape, 0, g->dtype, g->storage->device), 0, idx, tensor_reshape(g, 2, gshape)));
}

/* ---- indexing (more): scatter, scatter_reduce (>>index) ---- */
/* The part of src that index reaches (src may be larger): its leading index-shaped block. */
static tensor *tensor__src_under_index(tensor *src, tensor *index) {
    tensor *r = tensor__alias("tensor_backward", src);
    for (int d = 0; r && d < src->ndim; d++) {
        int64_t k = index->ndim ? index->shape[d] : 1;
        if (k != src->shape[d]) r = tensor_slice(r, d, 0, k, 1);
    }
    return r;
}
/* gs (index's shape) as the gradient of src: zeros where src is larger than index. */
static tensor *tensor__grad_to_src(tensor *gs, tensor *index, tensor *src) {
    int64_t pads[2 * TENSOR_MAX_DIMS], ishape[TENSOR_MAX_DIMS];
    bool same = true;
    for (int d = 0; d < src->ndim; d++) ishape[d] = index->ndim ? index->shape[d] : 1;
    if (gs && index->ndim != src->ndim) gs = tensor_reshape(gs, src->ndim, ishape);
    for (int k = 0; k < src->ndim; k++) {
        int d = src->ndim - 1 - k;
        pads[2 * k] = 0;
        pads[2 * k + 1] = src->shape[d] - ishape[d];
        same &= pads[2 * k + 1] == 0;
    }
    return same ? gs : tensor_pad(gs, 2 * src->ndim, pads, 0);
}
/* scatter(t, dim, index, src): t gets g but where src was written (0 there); src gets g gathered
   at index. */
static int tensor__derivative_scatter(tensor__node *n, tensor *g, tensor **grads) {
    tensor *index = n->saved[1], *src = n->saved[2];
    int d = (int)n->ip[0];
    if (n->next[0] && !(grads[0] = tensor_scatter_value(g, d, index, 0))) return 1;
    if (!n->next[2]) return 0;
    if (tensor__numel_of(index->ndim, index->shape) == 0) return TENSOR__OK(grads[2] = tensor__full_on(src->ndim, src->shape, 0, g->dtype, g->storage->device));
    return TENSOR__OK(grads[2] = tensor__grad_to_src(tensor_gather(g, d, index), index, src));
}
/* scatter_reduce (sum, prod, amax, amin; mean is a sum divided by counts): PyTorch's formulas.
   prod: the product of the others, computed without dividing by a zero (a zero of self or a lone
   zero of src replaced by 1 in one more reduction); amax / amin: g shared evenly among the
   elements equal to the result. Without include_self, self gets nothing where src was reduced. */
static int tensor__derivative_scatter_reduce(tensor__node *n, tensor *g, tensor **grads) {
    tensor *self = n->saved[0], *index = n->saved[1], *src = n->saved[2];
    int d = (int)n->ip[0], mode = (int)n->ip[1];
    bool incl = n->ip[2] != 0;
    static const char *const names[5] = {"sum", "prod", "mean", "amax", "amin"};
    tensor_device dev = g->storage->device;
    if (tensor__numel_of(index->ndim, index->shape) == 0) { /* nothing reduced: out is self */
        if (n->next[0] && !(grads[0] = tensor__alias("tensor_backward", g))) return 1;
        return n->next[2] ? TENSOR__OK(grads[2] = tensor__full_on(src->ndim, src->shape, 0, g->dtype, dev)) : 0;
    }
    tensor *gself = NULL, *gsrc = NULL;
    tensor *si = tensor__src_under_index(src, index);
    if (!si) return 1;
    switch (mode) {
    case 0: /* sum */
        gself = tensor__alias("tensor_backward", g);
        gsrc = tensor_gather(g, d, index);
        break;
    case 1: { /* prod */
        tensor *result = tensor_scatter_reduce(self, d, index, src, names[mode], incl);
        tensor *self_zero = tensor__op_scalar(TENSOR_OP_eq, self, 0);
        tensor *masked_self = tensor_masked_fill(self, self_zero, 1);
        tensor *msr = tensor_scatter_reduce(masked_self, d, index, src, names[mode], incl);
        gself = tensor_div(tensor_mul(g, msr), masked_self);
        tensor *src_zero = tensor__op_scalar(TENSOR_OP_eq, si, 0);
        tensor *zeros_at = tensor_scatter_add(tensor__full_on(self->ndim, self->shape, 0, self->dtype, dev), d, index, tensor_to_dtype(src_zero, self->dtype));
        tensor *num_zeros = tensor_gather(zeros_at, d, index);
        tensor *single = tensor_logical_and(src_zero, tensor__op_scalar(TENSOR_OP_eq, num_zeros, 1));
        tensor *msrc = tensor_masked_fill(si, single, 1);
        tensor *msrc_result = tensor_scatter_reduce(self, d, index, msrc, names[mode], incl);
        tensor *a = tensor_gather(tensor_mul(g, msrc_result), d, index);
        tensor *b = tensor_div(tensor_gather(tensor_mul(g, result), d, index), tensor_masked_fill(si, src_zero, 1));
        gsrc = tensor_where(single, a, b);
        break;
    }
    default: { /* amax, amin */
        tensor *result = tensor_scatter_reduce(self, d, index, src, names[mode], incl);
        tensor *self_is = tensor_to_dtype(tensor_eq(self, result), g->dtype);
        tensor *value = tensor_gather(result, d, index);
        tensor *src_is = tensor_to_dtype(tensor_eq(si, value), g->dtype);
        tensor *count = tensor_scatter_add(self_is, d, index, src_is);
        tensor *share = tensor_div(g, count);
        gself = tensor_mul(self_is, share);
        gsrc = tensor_mul(src_is, tensor_gather(share, d, index));
        break;
    }
    }
    if (n->next[0]) {
        if (!incl) gself = tensor_scatter_value(gself, d, index, 0);
        if (!(grads[0] = gself)) return 1;
    }
    if (!n->next[2]) return 0;
    return TENSOR__OK(grads[2] = tensor__grad_to_src(gsrc, index, src));
}

/* ---- linear algebra and neural-network functions ---- */

/* matmul: ga = g b^T, gb = a^T g, with 1-D operands made 2-D first and batch dims summed away. */
/* [r, c] stored column by column (a transposed view of a contiguous [c, r]). */
static bool tensor__transposed_2d(const tensor *t) {
    return t->ndim == 2 && t->shape[0] > 1 && t->shape[1] > 1 && t->strides[0] == 1 && t->strides[1] == t->shape[0];
}
static int tensor__derivative_matmul(tensor__node *n, tensor *g, tensor **grads) {
    tensor *a = n->saved[0], *b = n->saved[1];
    tensor *a2 = a->ndim == 1 ? tensor_unsqueeze(a, 0) : tensor__alias("tensor_backward", a);
    tensor *b2 = b->ndim == 1 ? tensor_unsqueeze(b, 1) : tensor__alias("tensor_backward", b);
    tensor *g2 = tensor__alias("tensor_backward", g);
    if (a->ndim == 1) g2 = tensor_unsqueeze(g2, g2 ? (b->ndim == 1 ? 0 : g2->ndim - 1) : 0);
    if (b->ndim == 1) g2 = tensor_unsqueeze(g2, g2 ? g2->ndim : 0);
    if (!a2 || !b2 || !g2) return 1;
    /* A batch of rows times one matrix (linear on x [B, T, C]): the batch dims fold into the rows,
       as PyTorch's matmul folds them, so the matrix's gradient is one GEMM over all B*T rows rather
       than B GEMMs and a sum over B. */
    if (a2->ndim > 2 && b2->ndim == 2) {
        int64_t as[2] = {tensor__numel_of(a2->ndim - 1, a2->shape), a2->shape[a2->ndim - 1]}, gs[2] = {as[0], g2->shape[g2->ndim - 1]};
        a2 = tensor_reshape(a2, 2, as);
        g2 = tensor_reshape(g2, 2, gs);
        if (!a2 || !g2) return 1;
    }
    /* A 2-D operand stored transposed (weight^T in linear) gets its gradient in the same layout, as
       PyTorch's mm backward does: the transpose's backward then hands a contiguous gradient to the
       leaf instead of one that must be copied element by element. */
    if (n->next[0] && tensor__transposed_2d(a2) && g2->ndim == 2 && b2->ndim == 2) {
        if (!(grads[0] = tensor_transpose(tensor_matmul(b2, tensor_transpose(g2, 0, 1)), 0, 1))) return 1;
    } else if (n->next[0]) {
        tensor *ga = tensor__sum_to(tensor_matmul(g2, tensor_transpose(b2, -1, -2)), a2->ndim, a2->shape);
        if (!(grads[0] = tensor_reshape(ga, a->ndim, a->shape))) return 1;
    }
    if (n->next[1] && tensor__transposed_2d(b2) && g2->ndim == 2 && a2->ndim == 2) {
        if (!(grads[1] = tensor_transpose(tensor_matmul(tensor_transpose(g2, 0, 1), a2), 0, 1))) return 1;
    } else if (n->next[1]) {
        tensor *gb = tensor__sum_to(tensor_matmul(tensor_transpose(a2, -1, -2), g2), b2->ndim, b2->shape);
        if (!(grads[1] = tensor_reshape(gb, b->ndim, b->shape))) return 1;
    }
    return 0;
}

/* softmax: s (g - sum(g s)); log_softmax: g - softmax sum(g). ip[0] is the dim, -1 for a 0-dim
   input (whose softmax is the constant 1). Without create_graph (grad mode off here) a fused kernel of >>nn does it in one pass. */
static int tensor__derivative_softmax(tensor__node *n, tensor *g, tensor **grads) {
    int d = (int)n->ip[0];
    if (d < 0) return TENSOR__OK(grads[0] = tensor_mul_scalar(g, 0));
    int fused = tensor__no_grad ? tensor__softmax_backward("tensor_backward", TENSOR__X, g, d, false, &grads[0]) : 0;
    if (fused) return fused < 0;
    tensor *s = tensor_softmax(TENSOR__X, d);
    return TENSOR__OK(grads[0] = tensor_mul(s, tensor_sub(g, tensor_sum(tensor_mul(g, s), d, true))));
}
static int tensor__derivative_log_softmax(tensor__node *n, tensor *g, tensor **grads) {
    int d = (int)n->ip[0];
    if (d < 0) return TENSOR__OK(grads[0] = tensor_mul_scalar(g, 0));
    int fused = tensor__no_grad ? tensor__softmax_backward("tensor_backward", TENSOR__X, g, d, true, &grads[0]) : 0;
    if (fused) return fused < 0;
    tensor *s = tensor_softmax(TENSOR__X, d);
    return TENSOR__OK(grads[0] = tensor_sub(g, tensor_mul(s, tensor_sum(g, d, true))));
}

/* scaled_dot_product_attention (in = {q, k, v, mask}, ip[0] is_causal), with P the attention
   weights, s = 1 / sqrt(E) and dS = P (g v^T - rowsum(P g v^T)): gv = P^T g, gq = s dS k,
   gk = s dS^T q, a float mask's g = dS, each summed back over the batch dims its input broadcast
   over. Without create_graph (and no float mask wanting a gradient) the fused kernel's backward
   (>>attention) computes gq, gk and gv tile by tile from the saved rows (n->extra); otherwise these
   formulas, composed, recompute P. */
static int tensor__derivative_scaled_dot_product_attention(tensor__node *n, tensor *g, tensor **grads) {
    tensor *q = n->saved[0], *k = n->saved[1], *v = n->saved[2], *mask = n->saved[3];
    bool causal = n->ip[0] != 0;
    if (tensor__no_grad && n->extra && !n->next[3]) {
        bool want[3] = {n->next[0] != NULL, n->next[1] != NULL, n->next[2] != NULL};
        return tensor__sdpa_backward("tensor_backward", n->saved, n->extra, causal, g, want, grads);
    }
    tensor *p = tensor__sdpa_weights("tensor_backward", q, k, mask, causal);
    if (!p) return 1;
    if (n->next[2] && !(grads[2] = tensor__sum_to(tensor_matmul(tensor_transpose(p, -1, -2), g), v->ndim, v->shape))) return 1;
    if (!n->next[0] && !n->next[1] && !n->next[3]) return 0;
    tensor *dp = tensor_matmul(g, tensor_transpose(v, -1, -2));
    tensor *ds = tensor_mul(p, tensor_sub(dp, tensor_sum(tensor_mul(dp, p), -1, true)));
    double s = 1.0 / sqrt((double)q->shape[q->ndim - 1]);
    if (n->next[0] && !(grads[0] = tensor__sum_to(tensor_mul_scalar(tensor_matmul(ds, k), s), q->ndim, q->shape))) return 1;
    if (n->next[1] && !(grads[1] = tensor__sum_to(tensor_mul_scalar(tensor_matmul(tensor_transpose(ds, -1, -2), q), s), k->ndim, k->shape))) return 1;
    if (n->next[3] && !(grads[3] = tensor__sum_to(ds, mask->ndim, mask->shape))) return 1;
    return 0;
}

/* layer_norm over the last dim: with xhat = (x - mean) rstd and gh = g w,
   gx = rstd (gh - mean(gh) - xhat mean(gh xhat)), gw = g xhat, gb = g (summed to [C]). Without
   create_graph, the fused kernel of >>norm (tensor__norm_backward) computes all three in one pass. */
static int tensor__derivative_layer_norm(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = n->saved[0], *w = n->saved[1];
    int fused = tensor__no_grad ? tensor__norm_backward("tensor_backward", true, x, w, g, n->p[0], n->next[0] ? &grads[0] : NULL,
                                                        n->next[1] ? &grads[1] : NULL, n->next[2] ? &grads[2] : NULL) : 0;
    if (fused) return fused < 0;
    tensor *mu = tensor_mean(x, -1, true);
    tensor *rstd = tensor_rsqrt(tensor_add_scalar(tensor_var(x, -1, 0, true), n->p[0]));
    tensor *xhat = tensor_mul(tensor_sub(x, mu), rstd);
    tensor *gh = w ? tensor_mul(g, w) : tensor__alias("tensor_backward", g);
    if (n->next[0]) {
        tensor *inner = tensor_sub(tensor_sub(gh, tensor_mean(gh, -1, true)), tensor_mul(xhat, tensor_mean(tensor_mul(gh, xhat), -1, true)));
        if (!(grads[0] = tensor_mul(rstd, inner))) return 1;
    }
    if (n->next[1] && !(grads[1] = tensor_mul(g, xhat))) return 1;
    if (n->next[2] && !(grads[2] = tensor__alias("tensor_backward", g))) return 1;
    return 0;
}
/* rms_norm: with r = 1 / sqrt(mean(x^2) + eps) and gh = g w, gx = r (gh - x r^2 mean(gh x)), gw = g x r
   (fused without create_graph, as layer_norm). */
static int tensor__derivative_rms_norm(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = n->saved[0], *w = n->saved[1];
    int fused = tensor__no_grad ? tensor__norm_backward("tensor_backward", false, x, w, g, n->p[0], n->next[0] ? &grads[0] : NULL,
                                                        n->next[1] ? &grads[1] : NULL, NULL) : 0;
    if (fused) return fused < 0;
    tensor *r = tensor_rsqrt(tensor_add_scalar(tensor_mean(tensor_square(x), -1, true), n->p[0]));
    tensor *gh = w ? tensor_mul(g, w) : tensor__alias("tensor_backward", g);
    if (n->next[0]) {
        tensor *inner = tensor_sub(gh, tensor_mul(tensor_mul(x, tensor_square(r)), tensor_mean(tensor_mul(gh, x), -1, true)));
        if (!(grads[0] = tensor_mul(r, inner))) return 1;
    }
    if (n->next[1] && !(grads[1] = tensor_mul(g, tensor_mul(x, r)))) return 1;
    return 0;
}

/* The class losses' targets t (ignore_index o->ignore) for a gradient g along class dim cdim:
   *idx (t with the ignored entries 0, any valid index, as int64), *keep (1 where counted, 0 where
   ignored, in g's dtype, t's shape), *wt (keep times the target's class weight) and *div, the
   divisor of the mean (the sum of wt). false on error. */
static bool tensor__class_targets(tensor *t, tensor *g, const tensor__ce_opts *o, tensor **idx, tensor **keep, tensor **wt, double *div) {
    tensor *ignored = tensor__op_scalar(TENSOR_OP_eq, t, (double)o->ignore);
    tensor *kept = ignored ? tensor_logical_not(ignored) : NULL;
    tensor *i = kept ? tensor_masked_fill(t, ignored, 0) : NULL;
    if (i && i->dtype != TENSOR_I64) i = tensor_to_dtype(i, TENSOR_I64);
    *idx = i;
    *keep = kept ? tensor__mask_float(kept, g) : NULL;
    *wt = *keep;
    if (*keep && i && o->weight) {
        int64_t flat = -1;
        tensor *sel = tensor_index_select((tensor *)o->weight, 0, tensor_reshape(i, 1, &flat));
        *wt = tensor_mul(tensor_reshape(sel, t->ndim, t->shape), *keep);
    }
    tensor *sum = *wt ? tensor_sum_all(*wt) : NULL;
    if (!sum) return false;
    *div = tensor_item(sum);
    return *idx != NULL;
}
/* The class weights viewed along class dim cdim of an ndim-dim input ([1, C, 1, ...]). */
static tensor *tensor__class_weights_view(const tensor *w, int ndim, int cdim) {
    int64_t shape[TENSOR_MAX_DIMS];
    for (int d = 0; d < ndim; d++) shape[d] = d == cdim ? w->shape[0] : 1;
    return tensor_reshape((tensor *)w, ndim, shape);
}
/* The share s of the output gradient g of each target (reduction none: its own; sum: g; mean:
   g / div, div 0 taken as 1 so that an all-ignored batch gets zeros). */
static tensor *tensor__class_loss_share(tensor *g, tensor_reduction r, double div) {
    if (r != TENSOR_REDUCTION_MEAN) return tensor__alias("tensor_backward", g);
    return tensor_div_scalar(g, div != 0 ? div : 1);
}
static bool tensor__no_weight_grad(tensor__node *n) {
    if (n->n_in < 3 || !n->next[2]) return true;
    tensor__fail("tensor_backward", "the derivative of %s with respect to weight is not implemented (PyTorch's neither): detach the class weights",
                 tensor__ops[n->op].fn);
    return false;
}

/* nll_loss, nll_loss_ex: -s w[t] at each counted target's position along the class dim (s the
   target's share of g); ignored targets get nothing (all ignored: zeros, as PyTorch). */
static int tensor__derivative_nll(tensor__node *n, tensor *g, tensor **grads) {
    if (!tensor__no_weight_grad(n)) return 1;
    tensor *lp = n->saved[0], *target = n->saved[1], *idx, *keep, *wt;
    tensor__ce_opts o = tensor__ce_opts_of((tensor_op)n->op, n->saved, n->p, n->ip);
    int cdim = lp->ndim == 1 ? 0 : 1;
    double div;
    if (!tensor__class_targets(target, g, &o, &idx, &keep, &wt, &div)) return 1;
    tensor *src = tensor_unsqueeze(tensor_neg(tensor_mul(wt, tensor__class_loss_share(g, o.reduction, div))), cdim);
    if (!src) return 1;
    return TENSOR__OK(grads[0] = tensor_scatter_add(tensor__full_on(lp->ndim, lp->shape, 0, g->dtype, g->storage->device), cdim, tensor_unsqueeze(idx, cdim), src));
}
static int tensor__derivative_nll_loss(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_nll(n, g, grads); }
static int tensor__derivative_nll_loss_ex(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_nll(n, g, grads); }

/* cross_entropy, cross_entropy_ex (in = {logits, targets, weight}, ip[0] 1 for probability
   targets): without create_graph the fused kernel of >>loss writes the gradient directly (on the
   CPU). With create_graph, or on a device, the same gradient is composed of differentiable ops:
   for class targets s (1 - eps) w[t] (softmax(x) - onehot) + s eps / C (sum(w) softmax(x) - w),
   0 on ignore_index rows; for probabilities p' = (1 - eps) p + eps / C, q = w p',
   gx = s (softmax(x) sum(q) - q) and gp = -s (1 - eps) w log_softmax(x). */
static int tensor__derivative_ce(tensor__node *n, tensor *g, tensor **grads) {
    if (!tensor__no_weight_grad(n)) return 1;
    tensor *x = n->saved[0], *t = n->saved[1];
    tensor__ce_opts o = tensor__ce_opts_of((tensor_op)n->op, n->saved, n->p, n->ip);
    bool prob = n->ip[0] != 0;
    int cdim = x->ndim == 1 ? 0 : 1;
    if (tensor__no_grad && x->storage->device == TENSOR_CPU) /* a device composes it from its ops */
        return tensor__cross_entropy_backward("tensor_backward", x, t, prob, &o, g, &grads[0], prob && n->next[1] ? &grads[1] : NULL) != 0;
    int64_t C = x->shape[cdim];
    double eps = o.eps;
    tensor *wb = o.weight ? tensor__class_weights_view(o.weight, x->ndim, cdim) : NULL;
    if (o.weight && !wb) return 1;
    if (prob) {
        int64_t rows = C ? tensor__numel_of(x->ndim, x->shape) / C : 0;
        tensor *s = o.reduction == TENSOR_REDUCTION_NONE ? tensor_unsqueeze(g, cdim) : tensor__class_loss_share(g, o.reduction, (double)rows);
        tensor *pp = eps > 0 ? tensor_add_scalar(tensor_mul_scalar(t, 1 - eps), eps / (double)C) : t;
        tensor *q = wb ? tensor_mul(pp, wb) : pp;
        if (n->next[0] && !(grads[0] = tensor_mul(tensor_sub(tensor_mul(tensor_softmax(x, cdim), tensor_sum(q, cdim, true)), q), s))) return 1;
        if (n->next[1]) {
            tensor *nl = tensor_neg(tensor_log_softmax(x, cdim));
            if (wb) nl = tensor_mul(nl, wb);
            if (!(grads[1] = tensor_mul(tensor_mul_scalar(nl, 1 - eps), s))) return 1;
        }
        return 0;
    }
    tensor *idx, *keep, *wt;
    double div;
    if (!tensor__class_targets(t, g, &o, &idx, &keep, &wt, &div)) return 1;
    tensor *s = tensor__class_loss_share(g, o.reduction, div);
    tensor *sm = tensor_softmax(x, cdim);
    tensor *onehot = tensor_scatter_add(tensor__full_on(x->ndim, x->shape, 0, g->dtype, g->storage->device), cdim, tensor_unsqueeze(idx, cdim), tensor_unsqueeze(keep, cdim));
    tensor *a = tensor_unsqueeze(tensor_mul(tensor_mul_scalar(wt, 1 - eps), s), cdim);
    tensor *gx = tensor_mul(a, tensor_sub(sm, onehot));
    if (eps > 0) {
        tensor *b = tensor_unsqueeze(tensor_mul(tensor_mul_scalar(keep, eps / (double)C), s), cdim);
        double wsum = (double)C;
        if (o.weight) {
            tensor *ws = tensor_sum_all((tensor *)o.weight);
            if (!ws) return 1;
            wsum = tensor_item(ws);
        }
        tensor *inner = wb ? tensor_sub(tensor_mul_scalar(sm, wsum), wb) : tensor_add_scalar(tensor_mul_scalar(sm, wsum), -1);
        gx = tensor_add(gx, tensor_mul(b, inner));
    }
    return TENSOR__OK(grads[0] = gx);
}
static int tensor__derivative_cross_entropy(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_ce(n, g, grads); }
static int tensor__derivative_cross_entropy_ex(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_ce(n, g, grads); }

/* dropout: the kernel's mask (0 or 1 / (1 - p)), kept in n->extra. */
static int tensor__derivative_dropout(tensor__node *n, tensor *g, tensor **grads) {
    if (!n->extra) return TENSOR__OK(grads[0] = tensor__alias("tensor_backward", g)); /* identity (not training) */
    return TENSOR__OK(grads[0] = tensor_mul(g, n->extra));
}

/* poisson (the random ops of issue 14): gradient 0 for the rates, as PyTorch's (the samples are
   not reparameterised; bernoulli's and normal's zeros come from their composites). */
static int tensor__derivative_poisson(tensor__node *n, tensor *g, tensor **grads) {
    (void)n;
    return TENSOR__OK(grads[0] = tensor_zeros_like(g));
}

/* conv and pooling: fused backward kernels of >>conv and >>pool (tensor__conv_backward,
   tensor__pool_backward), not written with differentiable ops, so a graph of them cannot be differentiated again: with
   create_graph they refuse rather than give a silently wrong second derivative. Call layout:
   in = {x, w, bias}, ip = {stride, padding, dilation, groups}; pooling in = {x}, ip = {kernel,
   stride, padding}. */
static bool tensor__first_order_only(tensor__node *n) {
    if (tensor__no_grad) return true;
    tensor__fail("tensor_autograd_grad", "create_graph through %s is not supported (its backward is a fused kernel)", tensor__ops[n->op].fn);
    return false;
}
static int tensor__derivative_conv(tensor__node *n, tensor *g, tensor **grads, int sd) {
    if (!tensor__first_order_only(n)) return 1;
    return tensor__conv_backward("tensor_backward", sd, n->saved[0], n->saved[1], g, n->ip, n->next[0] ? &grads[0] : NULL,
                                 n->next[1] ? &grads[1] : NULL, n->next[2] ? &grads[2] : NULL);
}
static int tensor__derivative_conv2d(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_conv(n, g, grads, 2); }
static int tensor__derivative_conv1d(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_conv(n, g, grads, 1); }
/* grid_sample (in = {input, grid}, ip = {mode, padding_mode, align_corners}): the fused backward
   of >>resample (first order only, as conv's) */
static int tensor__derivative_grid_sample(tensor__node *n, tensor *g, tensor **grads) {
    if (!tensor__first_order_only(n)) return 1;
    return tensor__grid_sample_backward("tensor_backward", n->saved[0], n->saved[1], g, n->ip, n->next[0] ? &grads[0] : NULL, n->next[1] ? &grads[1] : NULL);
}
static int tensor__derivative_max_pool2d(tensor__node *n, tensor *g, tensor **grads) {
    if (!tensor__first_order_only(n)) return 1;
    return TENSOR__OK(grads[0] = tensor__pool_backward("tensor_backward", true, n->saved[0], g, n->ip));
}
static int tensor__derivative_avg_pool2d(tensor__node *n, tensor *g, tensor **grads) {
    if (!tensor__first_order_only(n)) return 1;
    return TENSOR__OK(grads[0] = tensor__pool_backward("tensor_backward", false, n->saved[0], g, n->ip));
}
/* ctc_loss (in = {log_probs, targets, input_lengths, target_lengths}): the fused kernel of >>loss
   (PyTorch's ctc_loss_backward, itself not differentiable: create_graph refuses). */
static int tensor__derivative_ctc_loss(tensor__node *n, tensor *g, tensor **grads) {
    if (!tensor__first_order_only(n)) return 1;
    return TENSOR__OK(grads[0] = tensor__ctc_backward("tensor_backward", n->saved, n->ip, g));
}

/* ---- the nodes of the layer composites' fast paths (>>norm: tensor__layer_record) ----
   batch_norm: in = {x, weight, bias}, extra the statistics [2, C] f64 (mean, invstd), ip[0]
   training, p[0] eps: the fused backward of >>norm without create_graph; with it the same
   gradients composed of ops (training: the statistics recomputed from x, so they differentiate
   again). conv_transpose2d: in = {x, w, bias}, ip = {stride, padding, dilation, groups}: gx is
   conv2d(g, w), gw conv2d's weight gradient with g as its input and x as its output's gradient
   (tensor__conv_backward), gb the sum of g. interpolate: in = {x}, ip = {spatial dims, mode,
   align_corners, out...}, p the scales: the adjoint plane kernel of >>resample. The average pools
   (adaptive_avg_pool2d, adaptive_avg_pool1d, avg_pool1d): in = {x} (4-D), ip the windows: the
   adjoint plane kernel of >>pool. All but batch_norm's are fused kernels, so (as conv2d's) they
   refuse create_graph. */
static tensor *tensor__layer_sum_c(tensor *t) { /* [N, C, *] summed to [C] */
    if (!t) return NULL;
    int64_t s[3] = {t->shape[0], t->shape[1], tensor__numel_of(t->ndim - 2, t->shape + 2)};
    return tensor_sum(tensor_sum(tensor_reshape(t, 3, s), 2, false), 0, false);
}
static tensor *tensor__layer_per_c(tensor *v, const tensor *x) { /* [C] viewed as [C, 1, ...] */
    if (!v) return NULL;
    int64_t s[TENSOR_MAX_DIMS];
    s[0] = x->shape[1];
    for (int i = 1; i < x->ndim - 1; i++) s[i] = 1;
    return tensor_reshape(v, x->ndim - 1, s);
}
static int tensor__derivative_batch_norm_node(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = n->saved[0], *w = n->saved[1];
    bool training = n->ip[0] != 0;
    if (tensor__no_grad)
        return tensor__bn_backward("tensor_backward", x, w, n->extra, g, training, n->next[0] ? &grads[0] : NULL, n->next[1] ? &grads[1] : NULL,
                                   n->next[2] ? &grads[2] : NULL);
    tensor__tmps s = {{0}, 0}; /* the scope of the derivative owns what they hold */
    tensor *mean, *invstd;
    if (training) {
        mean = tensor__bn_mean(&s, x);
        tensor *xc = tensor_sub(x, mean);
        invstd = tensor_rsqrt(tensor_add_scalar(tensor__bn_mean(&s, tensor_mul(xc, xc)), n->p[0]));
    } else {
        mean = tensor__layer_per_c(tensor_to_dtype(tensor_select(n->extra, 0, 0), x->dtype), x);
        invstd = tensor__layer_per_c(tensor_to_dtype(tensor_select(n->extra, 0, 1), x->dtype), x);
    }
    tensor *xhat = tensor_mul(tensor_sub(x, mean), invstd);
    tensor *gh = w ? tensor_mul(g, tensor__layer_per_c(w, x)) : tensor__alias("tensor_backward", g);
    if (n->next[0]) {
        tensor *inner = training ? tensor_sub(tensor_sub(gh, tensor__bn_mean(&s, gh)), tensor_mul(xhat, tensor__bn_mean(&s, tensor_mul(gh, xhat)))) : gh;
        if (!(grads[0] = tensor_mul(inner, invstd))) return 1;
    }
    if (n->next[1] && !(grads[1] = tensor__layer_sum_c(tensor_mul(g, xhat)))) return 1;
    if (n->next[2] && !(grads[2] = tensor__layer_sum_c(g))) return 1;
    return 0;
}
static int tensor__derivative_conv_transpose2d_node(tensor__node *n, tensor *g, tensor **grads) {
    if (!tensor__first_order_only(n)) return 1;
    tensor *x = n->saved[0], *w = n->saved[1];
    if (n->next[0] && !(grads[0] = tensor_conv2d(g, w, NULL, (int)n->ip[0], (int)n->ip[1], (int)n->ip[2], (int)n->ip[3]))) return 1;
    if (n->next[1] && tensor__conv_backward("tensor_backward", 2, g, w, x, n->ip, NULL, &grads[1], NULL)) return 1;
    if (n->next[2] && !(grads[2] = tensor__layer_sum_c(g))) return 1;
    return 0;
}
static int tensor__derivative_interpolate_node(tensor__node *n, tensor *g, tensor **grads) {
    if (!tensor__first_order_only(n)) return 1;
    return TENSOR__OK(grads[0] = tensor__interp_backward("tensor_backward", n->saved[0], g, n->ip, n->p));
}
/* linalg_pinv (in = {A}, ip[0] hermitian, p = {atol, rtol}; lstsq records it too): PyTorch's
   pinv_backward, with P = pinv(A), G = g: gA = -P^T G P^T + (I - A P) G^T P P^T + P^T P G^T (I - P A),
   grouped so that every product is of the smaller side (K [m, m] when m <= n, else [n, n]). No
   1 / (s_i - s_j): finite where singular values repeat. P is recomputed from A through the public
   op, so the result differentiates again. hermitian: the formula with the symmetric matrix that
   was inverted, its gradient in every entry (as PyTorch's, not only the lower triangle read). */
static int tensor__derivative_linalg_pinv_node(tensor__node *n, tensor *g, tensor **grads) {
    tensor *A0 = TENSOR__X;
    bool herm = n->ip[0] != 0;
    int64_t m = A0->shape[A0->ndim - 2], nc = A0->shape[A0->ndim - 1];
    tensor *A = herm ? tensor__la_sym_lower(A0) : A0;
    tensor *P = tensor_linalg_pinv(A0, n->p[0], n->p[1], herm);
    tensor *Pt = tensor_transpose(P, -1, -2), *gt = tensor_transpose(g, -1, -2), *r;
    if (m <= nc) { /* K = G^T P: K P^T - (P K)^T - A P K P^T + P^T P (G^T - K A) */
        tensor *K = tensor_matmul(gt, P), *KPt = tensor_matmul(K, Pt);
        tensor *a = tensor_sub(tensor_sub(KPt, tensor_transpose(tensor_matmul(P, K), -1, -2)), tensor_matmul(tensor_matmul(A, P), KPt));
        r = tensor_add(a, tensor_matmul(tensor_matmul(Pt, P), tensor_sub(gt, tensor_matmul(K, A))));
    } else { /* K = P G^T: P^T K - (K P)^T + (G^T - A K) P P^T - P^T K P A */
        tensor *K = tensor_matmul(P, gt), *PtK = tensor_matmul(Pt, K);
        tensor *a = tensor_sub(PtK, tensor_transpose(tensor_matmul(K, P), -1, -2));
        r = tensor_sub(tensor_add(a, tensor_matmul(tensor_sub(gt, tensor_matmul(A, K)), tensor_matmul(P, Pt))), tensor_matmul(tensor_matmul(PtK, P), A));
    }
    return TENSOR__OK(grads[0] = r);
}

static int tensor__derivative_layer(tensor__node *n, tensor *g, tensor **grads) {
    switch (n->op) {
    case TENSOR_OP_linalg_pinv: return tensor__derivative_linalg_pinv_node(n, g, grads);
    case TENSOR_OP_batch_norm: return tensor__derivative_batch_norm_node(n, g, grads);
    case TENSOR_OP_conv_transpose2d: return tensor__derivative_conv_transpose2d_node(n, g, grads);
    case TENSOR_OP_interpolate: return tensor__derivative_interpolate_node(n, g, grads);
    case TENSOR_OP_adaptive_avg_pool2d:
    case TENSOR_OP_adaptive_avg_pool1d:
    case TENSOR_OP_avg_pool1d:
        if (!tensor__first_order_only(n)) return 1;
        return TENSOR__OK(grads[0] = tensor__avgpool_backward("tensor_backward", n->saved[0], g, n->ip));
    default: tensor__fail("tensor_backward", "%s recorded a node without a derivative", tensor__ops[n->op].fn); return 1;
    }
}

/* ---- linear algebra (decompositions) (>>linalg-decomp): PyTorch's formulas, written with the
   library's ops (so they differentiate again). Each recomputes its factor from the saved input
   (the contiguous A the kernel read). ---- */
/* LU (square, partial pivoting), A = P L U: A_grad = P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T
   with gL = tril(g, -1), gU = triu(g) (PyTorch's linalg_lu_backward). */
static int tensor__derivative_linalg_lu_factor(tensor__node *n, tensor *g, tensor **grads) {
    const char *fn = "tensor_backward";
    tensor *piv = NULL, *lu = tensor__la_lu(fn, TENSOR__X, &piv, false);
    if (!lu) return 1;
    tensor *eye = tensor_eye(lu->shape[lu->ndim - 1], lu->dtype);
    eye = tensor__on(eye, lu->storage->device);
    tensor *L = tensor_add(tensor_tril(lu, -1), eye), *U = tensor_triu(lu, 0);
    tensor *phi = tensor_add(tensor_tril(tensor_matmul(tensor_transpose(L, -1, -2), tensor_tril(g, -1)), -1),
                             tensor_triu(tensor_matmul(tensor_triu(g, 0), tensor_transpose(U, -1, -2)), 0));
    tensor *y = phi ? tensor_linalg_solve_triangular(tensor_transpose(L, -1, -2), phi, true, true, true) : NULL; /* L^-T phi */
    tensor *z = y ? tensor_linalg_solve_triangular(tensor_transpose(U, -1, -2), y, false, false, false) : NULL; /* y U^-T */
    tensor *inv = z ? tensor__la_perm(fn, piv, true) : NULL;
    return TENSOR__OK(grads[0] = inv ? tensor__la_rows(z, inv) : NULL);
}
/* Cholesky, A = L L^T: A_grad = sym(L^-T Phi(L^T g) L^-1), Phi: the lower triangle with its
   diagonal halved, sym(X) = (X + X^T) / 2 (PyTorch's cholesky_backward). */
static int tensor__derivative_linalg_cholesky(tensor__node *n, tensor *g, tensor **grads) {
    const char *fn = "tensor_backward";
    tensor *L = tensor__la_cholesky(fn, TENSOR__X, false);
    tensor *Lt = L ? tensor_transpose(L, -1, -2) : NULL;
    tensor *phi = Lt ? tensor_matmul(Lt, g) : NULL;
    phi = phi ? tensor_add(tensor_tril(phi, -1), tensor_mul_scalar(tensor_tril(tensor_triu(phi, 0), 0), 0.5)) : NULL;
    tensor *y = phi ? tensor__la_trsm(fn, Lt, phi, true, false) : NULL;                          /* L^-T phi */
    tensor *xt = y ? tensor__la_trsm(fn, Lt, tensor_transpose(y, -1, -2), true, false) : NULL;   /* (y L^-1)^T */
    return TENSOR__OK(grads[0] = xt ? tensor_mul_scalar(tensor_add(xt, tensor_transpose(xt, -1, -2)), 0.5) : NULL);
}
/* X = A^-1 B (A triangular): B_grad = A^-T g; A_grad = -B_grad X^T on A's triangle (strictly, when
   unitriangular). in = {A, B} at one batch shape; ip[0] upper, ip[1] unitriangular. */
static int tensor__derivative_linalg_solve_triangular(tensor__node *n, tensor *g, tensor **grads) {
    const char *fn = "tensor_backward";
    bool upper = n->ip[0] != 0, unit = n->ip[1] != 0;
    tensor *x = tensor__la_trsm(fn, TENSOR__X, TENSOR__Y, upper, unit);
    tensor *gb = x ? tensor__la_trsm(fn, tensor_transpose(TENSOR__X, -1, -2), g, !upper, unit) : NULL;
    tensor *ga = gb ? tensor_neg(tensor_matmul(gb, tensor_transpose(x, -1, -2))) : NULL;
    if (!ga) return 1;
    grads[0] = upper ? tensor_triu(ga, unit ? 1 : 0) : tensor_tril(ga, unit ? -1 : 0);
    grads[1] = gb;
    return TENSOR__OK(grads[0]);
}

/* ---- linear algebra (QR, eigh) (>>linalg-qr-eigh): PyTorch's formulas, written with the library's
   ops (so they differentiate again); each recomputes its factors from the saved input. The node's
   output is the kernel's packed result, so g holds the gradients of both results. ---- */
/* A = Q R with m >= n (Q [m, n], R [n, n]): gA = (gQ + Q copyltu(M)) R^-T, M = R gR^T - gQ^T Q,
   copyltu(M) = tril(M) + tril(M, -1)^T */
static tensor *tensor__qr_back_tall(tensor *Q, tensor *R, tensor *gQ, tensor *gR) {
    tensor *M = tensor_sub(tensor_matmul(R, tensor_transpose(gR, -1, -2)), tensor_matmul(tensor_transpose(gQ, -1, -2), Q));
    tensor *K = tensor_add(tensor_tril(M, 0), tensor_transpose(tensor_tril(M, -1), -1, -2));
    tensor *B = tensor_add(gQ, tensor_matmul(Q, K));
    return B ? tensor_linalg_solve_triangular(tensor_transpose(R, -1, -2), B, false, false, false) : NULL; /* X R^T = B */
}
/* QR (reduced, or complete with m <= n, the same factors); wide A = [X | Y] (m < n): R = [R1 | R2]
   with X = Q R1, R2 = Q^T Y: gY = Q gR2, and X's gradient with gQ + Y gR2^T, gR1 (PyTorch's
   linalg_qr_backward). ip[0]: the mode (0 reduced, 1 complete, 2 r). */
static int tensor__derivative_linalg_qr(tensor__node *n, tensor *g, tensor **grads) {
    const char *fn = "tensor_backward";
    tensor *A = TENSOR__X;
    int64_t m = A->shape[A->ndim - 2], nc = A->shape[A->ndim - 1], k = m < nc ? m : nc;
    if (n->ip[0] == 2) {
        tensor__fail(fn, "the derivative of linalg_qr depends on Q, which is not computed when mode='r'; use mode 'reduced' if you are going to differentiate through linalg_qr");
        return 1;
    }
    if (n->ip[0] == 1 && m > nc) {
        tensor__fail(fn, "the QR decomposition is not differentiable when mode='complete' and nrows > ncols");
        return 1;
    }
    tensor *Q = NULL, *R = NULL;
    if (!tensor__la_qr(fn, A, 0, &Q, &R)) return 1;
    tensor *gQ = tensor__qe_part(g, 0, m, k), *gR = tensor__qe_part(g, m * k, k, nc);
    if (m >= nc) return TENSOR__OK(grads[0] = tensor__qr_back_tall(Q, R, gQ, gR));
    tensor *gR2 = tensor_narrow(gR, -1, m, nc - m);
    tensor *gQ2 = tensor_add(gQ, tensor_matmul(tensor_narrow(A, -1, m, nc - m), tensor_transpose(gR2, -1, -2)));
    tensor *parts[2] = {tensor__qr_back_tall(Q, tensor_narrow(R, -1, 0, m), gQ2, tensor_narrow(gR, -1, 0, m)), tensor_matmul(Q, gR2)};
    return TENSOR__OK(grads[0] = parts[0] && parts[1] ? tensor_cat(2, parts, -1) : NULL);
}
/* eigh, A = V diag(w) V^T: gA = V (diag(gw) + skew(V^T gV) / E) V^T with skew(X) = (X - X^T) / 2,
   E_ij = w_j - w_i off the diagonal (1 on it; repeated eigenvalues give inf there where skew(V^T
   gV) is not 0, as PyTorch's); eigenvalues only (eigvalsh, or eigh without its eigenvectors,
   ip[1]): V diag(gw) V^T. ip[0]: upper. */
static int tensor__derivative_linalg_eigh(tensor__node *n, tensor *g, tensor **grads) {
    const char *fn = "tensor_backward";
    tensor *A = TENSOR__X;
    int64_t nn = A->shape[A->ndim - 1];
    tensor *w = NULL, *V = NULL;
    if (!tensor__la_eigh(fn, A, n->ip[0] != 0, false, &w, &V)) return 1;
    tensor *Vt = tensor_transpose(V, -1, -2);
    tensor *gw = n->ip[1] ? g : tensor_narrow(g, -1, 0, nn);
    tensor *inner = tensor_diag_embed(gw, 0, -2, -1);
    if (!n->ip[1]) {
        tensor *eye = tensor_eye(nn, A->dtype);
        eye = tensor__on(eye, A->storage->device);
        tensor *E = tensor_add(tensor_sub(tensor_unsqueeze(w, -2), tensor_unsqueeze(w, -1)), eye);
        tensor *K = tensor_matmul(Vt, tensor__qe_part(g, nn, nn, nn));
        tensor *Sk = tensor_mul_scalar(tensor_sub(K, tensor_transpose(K, -1, -2)), 0.5);
        /* 0 where skew(V^T gV) is 0 (a loss that does not use V gives no 0/0 at repeated eigenvalues) */
        tensor *S = tensor_masked_fill(tensor_div(Sk, E), tensor_eq(Sk, tensor_zeros_like(Sk)), 0);
        inner = tensor_add(inner, S);
    }
    return TENSOR__OK(grads[0] = tensor_matmul(V, tensor_matmul(inner, Vt)));
}

/* ---- misc: lerp, addcmul, addcdiv (PyTorch's derivatives; the engine sums each to its input's
   shape and dtype). lerp(x, y, w): g (1 - w), g w, g (y - x); addcmul(t, a, b, v): g, g v b, g v a;
   addcdiv(t, a, b, v): g, g v / b, -g v a / b^2. p[0] is v. ---- */
static int tensor__derivative_lerp(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = n->saved[0], *y = n->saved[1], *w = n->saved[2];
    if (n->next[0] && !(grads[0] = tensor_mul(g, tensor_add_scalar(tensor_neg(w), 1)))) return 1;
    if (n->next[1] && !(grads[1] = tensor_mul(g, w))) return 1;
    if (n->next[2] && !(grads[2] = tensor_mul(g, tensor_sub(y, x)))) return 1;
    return 0;
}
static int tensor__derivative_addcmul(tensor__node *n, tensor *g, tensor **grads) {
    tensor *a = n->saved[1], *b = n->saved[2];
    if (n->next[0] && !(grads[0] = tensor__alias("tensor_backward", g))) return 1;
    if (n->next[1] && !(grads[1] = tensor_mul(tensor_mul_scalar(g, n->p[0]), b))) return 1;
    if (n->next[2] && !(grads[2] = tensor_mul(tensor_mul_scalar(g, n->p[0]), a))) return 1;
    return 0;
}
static int tensor__derivative_addcdiv(tensor__node *n, tensor *g, tensor **grads) {
    tensor *a = n->saved[1], *b = n->saved[2];
    if (n->next[0] && !(grads[0] = tensor__alias("tensor_backward", g))) return 1;
    if (n->next[1] && !(grads[1] = tensor_div(tensor_mul_scalar(g, n->p[0]), b))) return 1;
    if (n->next[2] && !(grads[2] = tensor_div(tensor_mul(tensor_mul_scalar(g, -n->p[0]), a), tensor_mul(b, b)))) return 1;
    return 0;
}

/* ---- linear algebra (the SVD) (>>linalg-svd): PyTorch's svd_backward, written with library ops.
   The node's output is the kernel's packed [..., P] (U, S, Vh one after the other; the front-end
   hands out views), so g holds gU, gS, gVh (zeros where a part was not used); ip[0]
   full_matrices (only the first k columns of U / rows of Vh take part, as PyTorch), ip[1] values
   only (svdvals: A_grad = U diag(gS) Vh). U, S, Vh are recomputed from the saved input. ---- */
static int tensor__derivative_linalg_svd(tensor__node *n, tensor *g, tensor **grads) {
    const char *fn = "tensor_backward";
    tensor *A = TENSOR__X;
    bool full = n->ip[0] != 0, values = n->ip[1] != 0;
    int64_t m = A->shape[A->ndim - 2], nn = A->shape[A->ndim - 1], k = m < nn ? m : nn;
    if (k == 0) return TENSOR__OK(grads[0] = tensor_zeros_like(A));
    tensor *U = NULL, *S = NULL, *Vh = NULL;
    if (!tensor__svd_split(tensor__svd_run(fn, A, values ? false : full, false), m, nn, values ? false : full, &U, &S, &Vh)) return 1;
    if (full) { U = tensor_narrow(U, -1, 0, k); Vh = tensor_narrow(Vh, -2, 0, k); }
    if (values) /* U diag(gS) Vh */
        return TENSOR__OK(grads[0] = tensor_matmul(tensor_mul(U, tensor_unsqueeze(g, -2)), Vh));
    tensor *gU = NULL, *gS = NULL, *gVh = NULL;
    if (!tensor__svd_split(g, m, nn, full, &gU, &gS, &gVh)) return 1;
    if (full) { gU = tensor_narrow(gU, -1, 0, k); gVh = tensor_narrow(gVh, -2, 0, k); }
    tensor *Ut = tensor_transpose(U, -1, -2), *V = tensor_transpose(Vh, -1, -2);
    tensor *uhgu = tensor_matmul(Ut, gU), *vhgv = tensor_matmul(Vh, tensor_transpose(gVh, -1, -2));
    uhgu = tensor_sub(uhgu, tensor_transpose(uhgu, -1, -2)); /* skew parts */
    vhgv = tensor_sub(vhgv, tensor_transpose(vhgv, -1, -2));
    tensor *S2 = tensor_mul(S, S);
    tensor *eye = tensor_eye(k, A->dtype);
    eye = tensor__on(eye, A->storage->device);
    tensor *E = tensor_add(tensor_sub(tensor_unsqueeze(S2, -2), tensor_unsqueeze(S2, -1)), eye); /* S_j^2 - S_i^2, 1 on the diagonal */
    tensor *gA = tensor_div(tensor_add(tensor_mul(uhgu, tensor_unsqueeze(S, -2)), tensor_mul(tensor_unsqueeze(S, -1), vhgv)), E);
    gA = tensor_add(gA, tensor_diag_embed(gS, 0, -2, -1));
    if (m > nn) { /* [U gA + (I - U U^T) gU S^-1] Vh */
        tensor *gUSinv = tensor_div(gU, tensor_unsqueeze(S, -2));
        gA = tensor_add(tensor_matmul(U, gA), tensor_sub(gUSinv, tensor_matmul(U, tensor_matmul(Ut, gUSinv))));
        gA = tensor_matmul(gA, Vh);
    } else if (m < nn) { /* U [gA Vh + S^-1 gVh (I - V Vh)] */
        tensor *SinvgVh = tensor_div(gVh, tensor_unsqueeze(S, -1));
        gA = tensor_add(tensor_matmul(gA, Vh), tensor_sub(SinvgVh, tensor_matmul(tensor_matmul(SinvgVh, V), Vh)));
        gA = tensor_matmul(U, gA);
    } else gA = tensor_matmul(U, tensor_matmul(gA, Vh));
    return TENSOR__OK(grads[0] = gA);
}
