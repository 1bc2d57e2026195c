// >>autograd -----------------------------------------------------------------------------------
/* tensor_autograd.h: the derivative of every differentiable op, keyed by the ops.def names.
   The generator amalgamates this file into tensor.h after the kernels.

   The engine is not built yet: this file holds the hooks that every op front-end already calls, so
   the autograd issue adds derivatives here without touching the ops. Until then no graph is
   recorded and nothing is refused. */

/* Called by tensor__dispatch after an op's kernel succeeded: records a graph node on c->out when
   an input requires grad. */
static void tensor__autograd_record(tensor__call *c) { (void)c; }

/* Called by tensor_free: drops the handle's .grad and graph node. */
static void tensor__autograd_release(tensor *t) { (void)t; }

/* Called by every in-place op before it writes into a: refuses writes a graph depends on. */
static bool tensor__check_inplace(const char *fn, tensor *a) { (void)fn; (void)a; return true; }
