/* quickstart.c: a first tour of tensor.h.
   Build and run from the project root:
       cc -O2 examples/quickstart.c -o quickstart -lm -lpthread && ./quickstart
   (or `make` then ./examples/quickstart) */
#define TENSOR_IMPLEMENTATION
#include "../tensor.h" /* in your project: "tensor.h" */
#include <stdio.h>

int main(void) {
    tensor_scope_begin(); /* every handle made until tensor_scope_end is freed there */

    /* creation */
    tensor *a = tensor_arange(0, 6, 1, TENSOR_F32);             /* [0, 1, 2, 3, 4, 5] */
    tensor *m = tensor_reshape(a, TENSOR_SHAPE(2, 3));          /* a view: shares a's storage */
    printf("m =\n");
    tensor_print(m);

    /* broadcasting: [2, 3] + [3] -> [2, 3] */
    float row[3] = {10, 20, 30};
    tensor *r = tensor_from_data(row, TENSOR_SHAPE(3), TENSOR_F32);
    printf("m + row =\n");
    tensor_print(tensor_add(m, r));

    /* views: a transposed view and a write through a slice are visible in the base */
    tensor *mt = tensor_transpose(m, 0, 1);
    printf("m^T (a view, contiguous: %s) =\n", tensor_is_contiguous(mt) ? "yes" : "no");
    tensor_print(mt);
    tensor_fill_(tensor_slice(m, 1, 0, 3, 2), -1);               /* columns 0 and 2 := -1 */
    printf("a after writing through a slice of m =\n");
    tensor_print(a);

    /* reductions */
    printf("sum over dim 1 = ");
    tensor_print(tensor_sum(m, 1, false));
    printf("mean of all = %g, max = %g\n", tensor_item(tensor_mean_all(m)), tensor_item(tensor_max_all(m)));

    /* matmul: [2, 3] @ [3, 2] */
    tensor *w = tensor_ones(TENSOR_SHAPE(3, 2), TENSOR_F32);
    printf("m @ ones(3, 2) =\n");
    tensor_print(tensor_matmul(m, w));

    /* an error handled: nothing aborts, the call returns NULL and says why */
    tensor *bad = tensor_matmul(tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_F32), tensor_ones(TENSOR_SHAPE(4, 5), TENSOR_F32));
    if (!bad) printf("error handled: %s\n", tensor_last_error());
    tensor_clear_error();

    tensor_scope_end();
    tensor_shutdown();
    return 0;
}
