/* Autograd: the registry-driven gradient sweep and the engine's behaviour.
   Every differentiable op of ops.def (grad DIFF) must have a gradient check: a function
   gradcheck_NAME (written beside the op family's other autograd tests) that runs GRADCHECK on the
   op in f64 over shapes with broadcasting and non-contiguous inputs. They are declared weak here,
   so a differentiable op without one fails this test. */
#include "test.h"

#define DECLARE_GRADCHECK_DIFF(name) void gradcheck_##name(void) __attribute__((weak));
#define DECLARE_GRADCHECK_NODIFF(name)
#define DECLARE_GRADCHECK(name, kind, impl, types, grad, params, doc) DECLARE_GRADCHECK_##grad(name)
TENSOR_OPS(DECLARE_GRADCHECK)

typedef struct { const char *name; void (*fn)(void); bool diff; } gradcheck_case;
#define GRADCHECK_ROW_DIFF(name) {#name, gradcheck_##name, true},
#define GRADCHECK_ROW_NODIFF(name) {#name, NULL, false},
#define GRADCHECK_ROW(name, kind, impl, types, grad, params, doc) GRADCHECK_ROW_##grad(name)
static const gradcheck_case gradchecks[] = {TENSOR_OPS(GRADCHECK_ROW)};

TEST(autograd_every_differentiable_op_has_a_gradcheck) {
    int diff = 0, covered = 0;
    for (int op = 0; op < TENSOR_OP_COUNT; op++) {
        if (!gradchecks[op].diff) continue;
        diff++;
        if (!gradchecks[op].fn) { test_fail(__FILE__, __LINE__, "differentiable op '%s' has no gradient check (define gradcheck_%s)", gradchecks[op].name, gradchecks[op].name); continue; }
        tensor_scope_begin();
        gradchecks[op].fn();
        tensor_scope_end();
        CHECK_MSG(test_upper_vector_state_dirty() != 1, "op '%s' left the upper vector state dirty (missing vzeroupper)", gradchecks[op].name);
        covered++;
    }
    printf("  gradcheck sweep: %d of %d differentiable ops checked by finite differences\n", covered, diff);
}

/* Ops marked NODIFF record no graph: their result does not require grad. */
TEST(autograd_nondifferentiable_ops_record_nothing) {
    tensor *x = test_leaf(TENSOR_SHAPE(3, 4), -1, 1);
    CHECK(!tensor_requires_grad(tensor_eq(x, x)));
    CHECK(!tensor_requires_grad(tensor_argmax(x, 1, false)));
    CHECK(!tensor_requires_grad(tensor_isnan(x)));
    CHECK(tensor_requires_grad(tensor_floor(x))); /* in the graph, gradient 0 (PyTorch) */
    CHECK(tensor_requires_grad(tensor_exp(x)));
    bool was = tensor_set_grad_enabled(false);
    CHECK(!tensor_requires_grad(tensor_exp(x)));
    tensor_set_grad_enabled(was);
}
