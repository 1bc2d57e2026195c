/* Registry-driven sweeps: every op of ops.def must have a bad-input case. A case is a function
   bad_input_NAME (written beside the op's other tests) that calls the op with bad arguments through
   CHECK_BAD. Declared weak here, so an op added to ops.def without its case fails this test. */
#include "test.h"

#define DECLARE_BAD_INPUT(name, kind, impl, types, grad, params, doc) void bad_input_##name(void) __attribute__((weak));
TENSOR_OPS(DECLARE_BAD_INPUT)

typedef struct { const char *name; void (*fn)(void); } bad_input_case;
#define BAD_INPUT_ROW(name, kind, impl, types, grad, params, doc) {#name, bad_input_##name},
static const bad_input_case bad_inputs[] = {TENSOR_OPS(BAD_INPUT_ROW)};

TEST(registry_every_op_has_a_bad_input_case) {
    int covered = 0;
    for (int op = 0; op < TENSOR_OP_COUNT; op++) {
        CHECK_MSG(strcmp(bad_inputs[op].name, tensor_op_name((tensor_op)op)) == 0, "registry order differs for %s", bad_inputs[op].name);
        if (!bad_inputs[op].fn) { test_fail(__FILE__, __LINE__, "op '%s' has no bad-input case (define bad_input_%s)", bad_inputs[op].name, bad_inputs[op].name); continue; }
        bad_inputs[op].fn();
        covered++;
    }
    printf("  registry sweep: %d of %d ops have a bad-input case\n", covered, (int)TENSOR_OP_COUNT);
}

/* Every op: a NULL tensor argument after an earlier failure keeps the first message. */
TEST(registry_null_propagation_keeps_first_message) {
    tensor_clear_error();
    tensor *bad = tensor_zeros(TENSOR_SHAPE(-1), TENSOR_F32);
    CHECK(bad == NULL);
    const char *first = tensor_last_error();
    CHECK(first && strstr(first, "tensor_zeros"));
    tensor *r = tensor_add(bad, bad);
    CHECK(r == NULL);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_zeros"));
    r = tensor_exp(tensor_sum_all(tensor_matmul(bad, NULL)));
    CHECK(r == NULL);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_zeros"));
    tensor_clear_error();
    CHECK(tensor_last_error() == NULL);
}

TEST(registry_names_and_flags) {
    CHECK(strcmp(tensor_op_name(TENSOR_OP_add), "add") == 0);
    CHECK(tensor_op_name((tensor_op)TENSOR_OP_COUNT) == NULL);
    CHECK(tensor_op_differentiable(TENSOR_OP_exp));
    CHECK(!tensor_op_differentiable(TENSOR_OP_eq));
    CHECK(!tensor_op_differentiable(TENSOR_OP_argmax));
}
