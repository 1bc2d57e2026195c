/* Tests of the shape and construction ops of generator/parts/construct.h: values against numbers
   PyTorch 1.13 printed for the same calls (pasted below, no PyTorch needed to run), view semantics,
   the helpers that return several tensors, gradient checks (gradcheck_NAME, run by the registry
   sweep of tests/test_autograd.c) and bad inputs (bad_input_NAME, run by tests/test_registry.c). */
#include "test.h"

/* A tensor of shape holding 0, 1, 2, ... (row-major) in dtype. */
static tensor *seq(tensor_dtype dt, int ndim, const int64_t *shape) {
    int64_t n = test_numel(ndim, shape);
    tensor *r = tensor_arange(0, (double)n, 1, dt == TENSOR_BOOL ? TENSOR_I64 : dt);
    return tensor_reshape(r, ndim, shape);
}
#define SCALAR_SHAPE 0, NULL /* the shape of a 0-dim tensor, as one macro argument */
#define VALS(...) ((const double[]){__VA_ARGS__})
#define NV(...) (int64_t)(sizeof((const double[]){__VA_ARGS__}) / sizeof(double))
/* t has the shape and exactly the values given */
#define CHECK_T(t, shape_args, ...) do { tensor *ct_ = (t); CHECK_SHAPE(ct_, shape_args); CHECK_VALUES(ct_, VALS(__VA_ARGS__), NV(__VA_ARGS__), 0, 0); } while (0)

/* ---- views ---- */

TEST(construct_movedim_swapaxes_values) {
    tensor *x = seq(TENSOR_F32, TENSOR_SHAPE(2, 3, 4));
    tensor *m = tensor_movedim(x, 0, -1);
    CHECK_T(m, TENSOR_SHAPE(3, 4, 2), 0, 12, 1, 13, 2, 14, 3, 15, 4, 16, 5, 17, 6, 18, 7, 19, 8, 20, 9, 21, 10, 22, 11, 23);
    CHECK(tensor_shares_storage(m, x));
    /* torch.movedim(x, (0, 1), (2, 0)): [3, 4, 2], the same numbers */
    CHECK_T(tensor_movedim_dims(x, 2, (const int[]){0, 1}, (const int[]){2, 0}), TENSOR_SHAPE(3, 4, 2), 0, 12, 1, 13, 2, 14, 3, 15, 4, 16, 5, 17, 6, 18, 7,
            19, 8, 20, 9, 21, 10, 22, 11, 23);
    CHECK_SHAPE(tensor_movedim_dims(x, 2, (const int[]){-1, 0}, (const int[]){0, 1}), TENSOR_SHAPE(4, 2, 3));
    CHECK_SHAPE(tensor_movedim(tensor_scalar(1, TENSOR_F32), 0, -1), 0, NULL);
    tensor *s = tensor_swapaxes(x, 0, 2);
    CHECK_SHAPE(s, TENSOR_SHAPE(4, 3, 2));
    CHECK(tensor_shares_storage(s, x));
    double *want = test_values(tensor_contiguous(tensor_transpose(x, 0, 2)));
    CHECK_VALUES(tensor_contiguous(s), want, 24, 0, 0);
    free(want);
}

TEST(construct_broadcast_expand_reshape_as) {
    tensor *v = seq(TENSOR_I64, TENSOR_SHAPE(3, 1));
    tensor *b = tensor_broadcast_to(v, TENSOR_SHAPE(2, 3, 2));
    CHECK_T(b, TENSOR_SHAPE(2, 3, 2), 0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2);
    CHECK(tensor_shares_storage(b, v));
    CHECK_SHAPE(tensor_broadcast_to(v, TENSOR_SHAPE(-1, 4)), TENSOR_SHAPE(3, 4));
    tensor *o = tensor_zeros(TENSOR_SHAPE(5, 3, 4), TENSOR_F32);
    CHECK_SHAPE(tensor_expand_as(v, o), TENSOR_SHAPE(5, 3, 4));
    tensor *r = tensor_reshape_as(seq(TENSOR_F32, TENSOR_SHAPE(60)), o);
    CHECK_SHAPE(r, TENSOR_SHAPE(5, 3, 4));
    tensor *outs[3];
    tensor *ins[3] = {v, seq(TENSOR_F32, TENSOR_SHAPE(4)), tensor_scalar(7, TENSOR_F64)};
    CHECK(tensor_broadcast_tensors(3, ins, outs) == 3);
    for (int i = 0; i < 3; i++) { CHECK_SHAPE(outs[i], TENSOR_SHAPE(3, 4)); CHECK(tensor_shares_storage(outs[i], ins[i])); }
    CHECK_VALUES(outs[1], VALS(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3), 12, 0, 0);
    CHECK(tensor_get_dtype(outs[2]) == TENSOR_F64);
    CHECK(tensor_broadcast_tensors(0, NULL, NULL) == 0);
}

/* A running broadcast shape grows when a later operand has more dims (issue 24: [3] then [1, 2, 1]
   overwrote the first sizes and failed): every order of shapes of 0 to 3 dims, for
   broadcast_tensors and the ops that broadcast three operands. */
TEST(construct_broadcast_growing_ndim) {
    tensor_scope_begin();
    tensor *outs[3];
    tensor *two[2] = {seq(TENSOR_F32, TENSOR_SHAPE(3)), seq(TENSOR_F32, TENSOR_SHAPE(1, 2, 1))};
    CHECK(tensor_broadcast_tensors(2, two, outs) == 2);
    CHECK_T(outs[0], TENSOR_SHAPE(1, 2, 3), 0, 1, 2, 0, 1, 2);
    CHECK_T(outs[1], TENSOR_SHAPE(1, 2, 3), 0, 0, 0, 1, 1, 1);
    /* [3], [2, 1], [4, 1, 1] (and 0-dim) in every order: always [4, 2, 3] */
    static const int order[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    tensor *base[3] = {seq(TENSOR_F64, TENSOR_SHAPE(3)), seq(TENSOR_F64, TENSOR_SHAPE(2, 1)), seq(TENSOR_F64, TENSOR_SHAPE(4, 1, 1))};
    const int64_t want[3] = {4, 2, 3};
    for (int o = 0; o < 6; o++) {
        tensor *ins[3] = {base[order[o][0]], base[order[o][1]], base[order[o][2]]};
        CHECK(tensor_broadcast_tensors(3, ins, outs) == 3);
        for (int i = 0; i < 3; i++) CHECK_SHAPE(outs[i], 3, want);
        tensor *with0[3] = {tensor_scalar(1, TENSOR_F64), ins[0], ins[1]};
        CHECK(tensor_broadcast_tensors(3, with0, outs) == 3);
        CHECK_SHAPE(outs[0], tensor_ndim(outs[2]), tensor_shape(outs[2]));
        tensor *cond = tensor_gt(ins[0], tensor_scalar(0, TENSOR_F64));
        CHECK_SHAPE(tensor_where(cond, ins[1], ins[2]), 3, want);
        CHECK_SHAPE(tensor_lerp(ins[0], ins[1], ins[2]), 3, want);
        CHECK_SHAPE(tensor_addcmul(ins[0], ins[1], ins[2], 2), 3, want);
        CHECK_SHAPE(tensor_addcdiv(ins[0], ins[1], tensor_add_scalar(ins[2], 1), 2), 3, want);
        CHECK_SHAPE(tensor_clamp_tensor(ins[0], ins[1], ins[2]), 3, want);
        /* advanced indexing: the index tensors broadcast to [4, 2, 3] whatever their order; values
           of that shape fit it */
        tensor *ix[3];
        for (int i = 0; i < 3; i++) ix[i] = tensor_to_dtype(ins[i], TENSOR_I64);
        CHECK_SHAPE(tensor_index_put(tensor_zeros(TENSOR_SHAPE(4, 4, 4), TENSOR_F64), 3, ix, tensor_ones(3, want, TENSOR_F64), true), TENSOR_SHAPE(4, 4, 4));
    }
    CHECK(tensor_last_error() == NULL);
    tensor_scope_end();
}

TEST(construct_unflatten_narrow_atleast) {
    tensor *x = seq(TENSOR_F32, TENSOR_SHAPE(2, 12));
    tensor *u = tensor_unflatten(x, 1, 2, (const int64_t[]){3, -1});
    CHECK_SHAPE(u, TENSOR_SHAPE(2, 3, 4));
    CHECK(tensor_shares_storage(u, x));
    CHECK_SHAPE(tensor_unflatten(tensor_transpose(x, 0, 1), -2, 3, (const int64_t[]){2, 1, -1}), TENSOR_SHAPE(2, 1, 6, 2)); /* a view of a transposed input */
    CHECK(tensor_shares_storage(tensor_unflatten(tensor_transpose(x, 0, 1), 0, 2, (const int64_t[]){3, 4}), x));
    CHECK_SHAPE(tensor_unflatten(tensor_zeros(TENSOR_SHAPE(0, 6), TENSOR_F32), 1, 2, (const int64_t[]){-1, 2}), TENSOR_SHAPE(0, 3, 2));
    tensor *a = seq(TENSOR_F32, TENSOR_SHAPE(5));
    tensor *n = tensor_narrow(a, 0, -2, 2); /* torch.narrow(arange(5.), 0, -2, 2) */
    CHECK_T(n, TENSOR_SHAPE(2), 3, 4);
    CHECK(tensor_shares_storage(n, a));
    CHECK_T(tensor_narrow(x, 1, 10, 2), TENSOR_SHAPE(2, 2), 10, 11, 22, 23);
    CHECK_SHAPE(tensor_narrow(a, 0, 5, 0), TENSOR_SHAPE(0));
    tensor *s = tensor_scalar(3, TENSOR_F32);
    CHECK_SHAPE(tensor_atleast_1d(s), TENSOR_SHAPE(1));
    CHECK_SHAPE(tensor_atleast_2d(s), TENSOR_SHAPE(1, 1));
    CHECK_SHAPE(tensor_atleast_3d(s), TENSOR_SHAPE(1, 1, 1));
    CHECK_SHAPE(tensor_atleast_2d(a), TENSOR_SHAPE(1, 5));
    CHECK_SHAPE(tensor_atleast_3d(a), TENSOR_SHAPE(1, 5, 1));
    CHECK_SHAPE(tensor_atleast_3d(x), TENSOR_SHAPE(2, 12, 1));
    CHECK_SHAPE(tensor_atleast_1d(x), TENSOR_SHAPE(2, 12));
    CHECK(tensor_shares_storage(tensor_atleast_3d(x), x));
}

TEST(construct_as_strided_unfold_diagonal_values) {
    tensor *a = seq(TENSOR_F32, TENSOR_SHAPE(9));
    tensor *s = tensor_as_strided(a, 2, (const int64_t[]){2, 2}, (const int64_t[]){1, 2}, 1);
    CHECK_T(s, TENSOR_SHAPE(2, 2), 1, 3, 2, 4);
    CHECK(tensor_shares_storage(s, a));
    CHECK_T(tensor_as_strided(a, 2, (const int64_t[]){3, 3}, (const int64_t[]){2, 1}, 0), TENSOR_SHAPE(3, 3), 0, 1, 2, 2, 3, 4, 4, 5, 6);
    /* storage_offset < 0 keeps the input's offset (None in PyTorch) */
    CHECK_T(tensor_as_strided(tensor_slice(a, 0, 4, 9, 1), 1, (const int64_t[]){3}, (const int64_t[]){2}, -1), TENSOR_SHAPE(3), 4, 6, 8);
    CHECK_T(tensor_unfold(seq(TENSOR_F32, TENSOR_SHAPE(7)), 0, 2, 2), TENSOR_SHAPE(3, 2), 0, 1, 2, 3, 4, 5);
    tensor *y = seq(TENSOR_F32, TENSOR_SHAPE(3, 4));
    CHECK_T(tensor_unfold(y, 1, 3, 1), TENSOR_SHAPE(3, 2, 3), 0, 1, 2, 1, 2, 3, 4, 5, 6, 5, 6, 7, 8, 9, 10, 9, 10, 11);
    CHECK_T(tensor_unfold(y, 0, 2, 1), TENSOR_SHAPE(2, 4, 2), 0, 4, 1, 5, 2, 6, 3, 7, 4, 8, 5, 9, 6, 10, 7, 11);
    CHECK_SHAPE(tensor_unfold(tensor_scalar(2, TENSOR_F32), 0, 1, 1), TENSOR_SHAPE(1));
    CHECK_SHAPE(tensor_unfold(y, -1, 0, 3), TENSOR_SHAPE(3, 2, 0));
    CHECK(tensor_shares_storage(tensor_unfold(y, 1, 3, 1), y));
    tensor *d = tensor_diagonal(y, 1, 0, 1);
    CHECK_T(d, TENSOR_SHAPE(3), 1, 6, 11);
    CHECK(tensor_shares_storage(d, y));
    CHECK_T(tensor_diagonal(y, -2, 0, 1), TENSOR_SHAPE(1), 8);
    CHECK_SHAPE(tensor_diagonal(y, 5, 0, 1), TENSOR_SHAPE(0));
    CHECK_SHAPE(tensor_diagonal(y, -3, 0, 1), TENSOR_SHAPE(0));
    tensor *x = seq(TENSOR_F32, TENSOR_SHAPE(2, 3, 4));
    CHECK_T(tensor_diagonal(x, 0, 0, 2), TENSOR_SHAPE(3, 2), 0, 13, 4, 17, 8, 21);
    CHECK_T(tensor_diagonal(x, -1, 2, 1), TENSOR_SHAPE(2, 3), 1, 6, 11, 13, 18, 23);
    CHECK_T(tensor_diagonal(tensor_transpose(y, 0, 1), 1, 0, 1), TENSOR_SHAPE(2), 4, 9); /* a non-contiguous input */
    /* writes through the diagonal view reach the base */
    tensor_fill_(tensor_diagonal(y, 0, 0, 1), -1);
    CHECK_VALUES(y, VALS(-1, 1, 2, 3, 4, -1, 6, 7, 8, 9, -1, 11), 12, 0, 0);
}

/* ---- several outputs ---- */

TEST(construct_chunk_tensor_split_unbind) {
    tensor *x = seq(TENSOR_F32, TENSOR_SHAPE(5, 2)), *out[8] = {NULL};
    CHECK(tensor_chunk(x, 3, 0, out, 8) == 3); /* torch.chunk: [2, 2], [2, 2], [1, 2] */
    CHECK_T(out[0], TENSOR_SHAPE(2, 2), 0, 1, 2, 3);
    CHECK_T(out[1], TENSOR_SHAPE(2, 2), 4, 5, 6, 7);
    CHECK_T(out[2], TENSOR_SHAPE(1, 2), 8, 9);
    CHECK(tensor_shares_storage(out[2], x));
    CHECK(tensor_chunk(seq(TENSOR_F32, TENSOR_SHAPE(6)), 4, 0, out, 8) == 3); /* [0, 1], [2, 3], [4, 5] */
    CHECK_T(out[2], TENSOR_SHAPE(2), 4, 5);
    CHECK(tensor_chunk(x, 2, -1, out, 8) == 2);
    CHECK_T(out[1], TENSOR_SHAPE(5, 1), 1, 3, 5, 7, 9);
    CHECK(tensor_chunk(tensor_zeros(TENSOR_SHAPE(0), TENSOR_F32), 3, 0, out, 8) == 3); /* three empty pieces */
    for (int i = 0; i < 3; i++) CHECK_SHAPE(out[i], TENSOR_SHAPE(0));
    tensor *a = seq(TENSOR_I64, TENSOR_SHAPE(7));
    CHECK(tensor_tensor_split(a, 3, 0, out, 8) == 3); /* [0, 1, 2], [3, 4], [5, 6] */
    CHECK_T(out[0], TENSOR_SHAPE(3), 0, 1, 2);
    CHECK_T(out[1], TENSOR_SHAPE(2), 3, 4);
    CHECK_T(out[2], TENSOR_SHAPE(2), 5, 6);
    CHECK(tensor_tensor_split(seq(TENSOR_F32, TENSOR_SHAPE(2)), 4, 0, out, 8) == 4); /* [0], [1], [], [] */
    CHECK_SHAPE(out[1], TENSOR_SHAPE(1));
    CHECK_SHAPE(out[3], TENSOR_SHAPE(0));
    /* torch.tensor_split(arange(7), [1, 5, 3, -1, 10]): [0], [1..4], [], [3, 4, 5], [6], [] */
    CHECK(tensor_tensor_split_indices(a, 5, (const int64_t[]){1, 5, 3, -1, 10}, 0, out, 8) == 6);
    CHECK_T(out[0], TENSOR_SHAPE(1), 0);
    CHECK_T(out[1], TENSOR_SHAPE(4), 1, 2, 3, 4);
    CHECK_SHAPE(out[2], TENSOR_SHAPE(0));
    CHECK_T(out[3], TENSOR_SHAPE(3), 3, 4, 5);
    CHECK_T(out[4], TENSOR_SHAPE(1), 6);
    CHECK_SHAPE(out[5], TENSOR_SHAPE(0));
    CHECK(tensor_tensor_split_indices(x, 0, NULL, 1, out, 1) == 1);
    CHECK_SHAPE(out[0], TENSOR_SHAPE(5, 2));
    tensor *m = seq(TENSOR_F32, TENSOR_SHAPE(2, 3));
    CHECK(tensor_unbind(m, 1, out, 8) == 3);
    CHECK_T(out[0], TENSOR_SHAPE(2), 0, 3);
    CHECK_T(out[2], TENSOR_SHAPE(2), 2, 5);
    CHECK(tensor_shares_storage(out[1], m));
    CHECK(tensor_unbind(m, -2, out, 2) == 2);
    CHECK_T(out[1], TENSOR_SHAPE(3), 3, 4, 5);
    CHECK(tensor_unbind(tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F32), 0, out, 8) == 0);
}

TEST(construct_several_outputs_errors) {
    tensor *x = seq(TENSOR_F32, TENSOR_SHAPE(5, 2)), *out[8] = {NULL}, *s = tensor_scalar(1, TENSOR_F32);
    CHECK_BAD_INT(tensor_chunk(NULL, 2, 0, out, 8) < 0, "tensor_chunk");
    CHECK_BAD_INT(tensor_chunk(x, 2, 0, NULL, 8) < 0, "tensor_chunk");
    CHECK_BAD_INT(tensor_chunk(x, 0, 0, out, 8) < 0, "tensor_chunk");
    CHECK_BAD_INT(tensor_chunk(x, 2, 2, out, 8) < 0, "tensor_chunk");
    CHECK_BAD_INT(tensor_chunk(s, 2, 0, out, 8) < 0, "tensor_chunk");
    CHECK_BAD_INT(tensor_chunk(x, 5, 0, out, 4) < 0, "tensor_chunk");
    CHECK_BAD_INT(tensor_tensor_split(x, 0, 0, out, 8) < 0, "tensor_tensor_split");
    CHECK_BAD_INT(tensor_tensor_split(x, 9, 0, out, 8) < 0, "tensor_tensor_split");
    CHECK_BAD_INT(tensor_tensor_split(s, 2, 0, out, 8) < 0, "tensor_tensor_split");
    CHECK_BAD_INT(tensor_tensor_split(x, 2, -3, out, 8) < 0, "tensor_tensor_split");
    CHECK_BAD_INT(tensor_tensor_split_indices(x, 1, NULL, 0, out, 8) < 0, "tensor_tensor_split_indices");
    CHECK_BAD_INT(tensor_tensor_split_indices(x, -1, NULL, 0, out, 8) < 0, "tensor_tensor_split_indices");
    CHECK_BAD_INT(tensor_tensor_split_indices(x, 2, (const int64_t[]){1, 2}, 0, out, 2) < 0, "tensor_tensor_split_indices");
    CHECK_BAD_INT(tensor_unbind(x, 0, out, 4) < 0, "tensor_unbind");
    CHECK_BAD_INT(tensor_unbind(s, 0, out, 4) < 0, "tensor_unbind");
    CHECK_BAD_INT(tensor_unbind(NULL, 0, out, 4) < 0, "tensor_unbind");
    tensor *bad[2] = {x, seq(TENSOR_F32, TENSOR_SHAPE(3))}, *nul[2] = {x, NULL};
    CHECK_BAD_INT(tensor_broadcast_tensors(2, bad, out) < 0, "tensor_broadcast_tensors");
    CHECK_BAD_INT(tensor_broadcast_tensors(2, nul, out) < 0, "tensor_broadcast_tensors");
    CHECK_BAD_INT(tensor_broadcast_tensors(-1, bad, out) < 0, "tensor_broadcast_tensors");
    CHECK_BAD_INT(tensor_broadcast_tensors(2, bad, NULL) < 0, "tensor_broadcast_tensors");
    tensor *v1 = seq(TENSOR_F32, TENSOR_SHAPE(3)), *vi = seq(TENSOR_I64, TENSOR_SHAPE(3));
    tensor *two_d[2] = {v1, x}, *mixed[2] = {v1, vi}, *ok[2] = {v1, v1};
    CHECK_BAD_INT(tensor_meshgrid(2, two_d, "ij", out) < 0, "tensor_meshgrid");
    CHECK_BAD_INT(tensor_meshgrid(2, mixed, "ij", out) < 0, "tensor_meshgrid");
    CHECK_BAD_INT(tensor_meshgrid(2, ok, "yx", out) < 0, "tensor_meshgrid");
    CHECK_BAD_INT(tensor_meshgrid(2, ok, "ij", NULL) < 0, "tensor_meshgrid");
    CHECK_BAD_INT(tensor_meshgrid(2, nul, "ij", out) < 0, "tensor_meshgrid");
    CHECK_BAD_INT(tensor_meshgrid(9, ok, "ij", out) < 0, "tensor_meshgrid");
}

TEST(construct_meshgrid_cartesian_prod) {
    tensor *a = test_tensor(TENSOR_F32, TENSOR_SHAPE(3), VALS(1, 2, 3)), *b = test_tensor(TENSOR_F32, TENSOR_SHAPE(2), VALS(4, 5));
    tensor *ab[2] = {a, b}, *g[2] = {NULL, NULL};
    CHECK(tensor_meshgrid(2, ab, "ij", g) == 2);
    CHECK_T(g[0], TENSOR_SHAPE(3, 2), 1, 1, 2, 2, 3, 3);
    CHECK_T(g[1], TENSOR_SHAPE(3, 2), 4, 5, 4, 5, 4, 5);
    CHECK(tensor_shares_storage(g[0], a) && tensor_shares_storage(g[1], b));
    CHECK(tensor_meshgrid(2, ab, NULL, g) == 2);
    CHECK_SHAPE(g[0], TENSOR_SHAPE(3, 2));
    CHECK(tensor_meshgrid(2, ab, "xy", g) == 2);
    CHECK_T(g[0], TENSOR_SHAPE(2, 3), 1, 2, 3, 1, 2, 3);
    CHECK_T(g[1], TENSOR_SHAPE(2, 3), 4, 4, 4, 5, 5, 5);
    tensor *three[3] = {a, b, tensor_scalar(9, TENSOR_F32)}, *g3[3];
    CHECK(tensor_meshgrid(3, three, "xy", g3) == 3);
    CHECK_SHAPE(g3[2], TENSOR_SHAPE(2, 3, 1));
    tensor *ia = test_tensor(TENSOR_I64, TENSOR_SHAPE(2), VALS(1, 2)), *ib = test_tensor(TENSOR_I64, TENSOR_SHAPE(3), VALS(3, 4, 5));
    tensor *iab[2] = {ia, ib};
    tensor *c = tensor_cartesian_prod(2, iab);
    CHECK_T(c, TENSOR_SHAPE(6, 2), 1, 3, 1, 4, 1, 5, 2, 3, 2, 4, 2, 5);
    CHECK(tensor_get_dtype(c) == TENSOR_I64);
    CHECK_T(tensor_cartesian_prod(1, iab), TENSOR_SHAPE(2), 1, 2);
    tensor *abc[3] = {ia, ia, ia};
    CHECK_SHAPE(tensor_cartesian_prod(3, abc), TENSOR_SHAPE(8, 3));
}

/* ---- copies ---- */

TEST(construct_flip_roll_rot90_values) {
    tensor *m = seq(TENSOR_F32, TENSOR_SHAPE(2, 3));
    CHECK_T(tensor_flip_dims(m, 2, (const int[]){0, -1}), TENSOR_SHAPE(2, 3), 5, 4, 3, 2, 1, 0);
    CHECK_T(tensor_flip_dims(m, 0, NULL), TENSOR_SHAPE(2, 3), 0, 1, 2, 3, 4, 5);
    CHECK(!tensor_shares_storage(tensor_flip_dims(m, 0, NULL), m));
    CHECK_T(tensor_fliplr(m), TENSOR_SHAPE(2, 3), 2, 1, 0, 5, 4, 3);
    CHECK_T(tensor_flipud(m), TENSOR_SHAPE(2, 3), 3, 4, 5, 0, 1, 2);
    CHECK_T(tensor_flipud(seq(TENSOR_I32, TENSOR_SHAPE(3))), TENSOR_SHAPE(3), 2, 1, 0);
    /* torch.roll */
    CHECK_T(tensor_roll(m, 1, (const int64_t[]){1}, NULL), TENSOR_SHAPE(2, 3), 5, 0, 1, 2, 3, 4);
    CHECK_T(tensor_roll(m, 2, (const int64_t[]){1, -1}, (const int[]){0, 1}), TENSOR_SHAPE(2, 3), 4, 5, 3, 1, 2, 0);
    CHECK_T(tensor_roll(m, 1, (const int64_t[]){-7}, (const int[]){1}), TENSOR_SHAPE(2, 3), 1, 2, 0, 4, 5, 3);
    CHECK_T(tensor_roll(tensor_transpose(m, 0, 1), 1, (const int64_t[]){4}, (const int[]){0}), TENSOR_SHAPE(3, 2), 2, 5, 0, 3, 1, 4);
    CHECK_T(tensor_roll(tensor_scalar(3, TENSOR_F32), 1, (const int64_t[]){2}, NULL), SCALAR_SHAPE, 3);
    CHECK_SHAPE(tensor_roll(tensor_zeros(TENSOR_SHAPE(0, 2), TENSOR_F32), 1, (const int64_t[]){1}, (const int[]){0}), TENSOR_SHAPE(0, 2));
    CHECK(!tensor_shares_storage(tensor_roll(m, 1, (const int64_t[]){3}, (const int[]){1}), m));
    CHECK_SHAPE(tensor_roll(tensor_zeros(TENSOR_SHAPE(0, 2), TENSOR_F32), 1, (const int64_t[]){1}, NULL), TENSOR_SHAPE(0, 2)); /* empty, flattened */
    /* torch.rot90(m, k, (0, 1)) */
    CHECK_T(tensor_rot90(m, 1, 0, 1), TENSOR_SHAPE(3, 2), 2, 5, 1, 4, 0, 3);
    CHECK_T(tensor_rot90(m, -1, 0, 1), TENSOR_SHAPE(3, 2), 3, 0, 4, 1, 5, 2);
    CHECK_T(tensor_rot90(m, 2, 0, 1), TENSOR_SHAPE(2, 3), 5, 4, 3, 2, 1, 0);
    CHECK_T(tensor_rot90(m, 5, 0, 1), TENSOR_SHAPE(3, 2), 2, 5, 1, 4, 0, 3);
    CHECK_T(tensor_rot90(m, 4, 0, 1), TENSOR_SHAPE(2, 3), 0, 1, 2, 3, 4, 5);
    CHECK_T(tensor_rot90(seq(TENSOR_F32, TENSOR_SHAPE(2, 3, 4)), 1, 2, 0), TENSOR_SHAPE(4, 3, 2), 12, 0, 16, 4, 20, 8, 13, 1, 17, 5, 21, 9, 14, 2, 18, 6, 22, 10,
            15, 3, 19, 7, 23, 11);
}

TEST(construct_tile_repeat_interleave_values) {
    CHECK_T(tensor_tile(test_tensor(TENSOR_F32, TENSOR_SHAPE(2), VALS(1, 2)), 2, (const int64_t[]){2, 2}), TENSOR_SHAPE(2, 4), 1, 2, 1, 2, 1, 2, 1, 2);
    tensor *m = seq(TENSOR_F32, TENSOR_SHAPE(2, 3));
    CHECK_T(tensor_tile(m, 1, (const int64_t[]){2}), TENSOR_SHAPE(2, 6), 0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5);
    CHECK_T(tensor_tile(m, 3, (const int64_t[]){2, 1, 2}), TENSOR_SHAPE(2, 2, 6), 0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5, 0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5);
    CHECK_T(tensor_tile(m, 0, NULL), TENSOR_SHAPE(2, 3), 0, 1, 2, 3, 4, 5);
    CHECK_T(tensor_repeat_interleave(m, 2, NULL), TENSOR_SHAPE(12), 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5);
    int d0 = 0, dm1 = -1;
    CHECK_T(tensor_repeat_interleave(m, 2, &d0), TENSOR_SHAPE(4, 3), 0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5);
    CHECK_T(tensor_repeat_interleave(m, 3, &dm1), TENSOR_SHAPE(2, 9), 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5);
    CHECK_T(tensor_repeat_interleave(tensor_transpose(m, 0, 1), 2, &d0), TENSOR_SHAPE(6, 2), 0, 3, 0, 3, 1, 4, 1, 4, 2, 5, 2, 5);
    CHECK_T(tensor_repeat_interleave(tensor_scalar(4, TENSOR_I64), 3, &d0), TENSOR_SHAPE(3), 4, 4, 4);
    CHECK_SHAPE(tensor_repeat_interleave(m, 0, &d0), TENSOR_SHAPE(0, 3));
    CHECK_SHAPE(tensor_repeat_interleave(tensor_zeros(TENSOR_SHAPE(2, 0), TENSOR_F32), 2, NULL), TENSOR_SHAPE(0));
    CHECK_SHAPE(tensor_diagflat(tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F32), 1), TENSOR_SHAPE(1, 1));
    tensor *e0 = tensor_zeros(TENSOR_SHAPE(0), TENSOR_F32), *e2[2] = {e0, seq(TENSOR_F32, TENSOR_SHAPE(2))};
    CHECK_SHAPE(tensor_cartesian_prod(2, e2), TENSOR_SHAPE(0, 2));
    CHECK(tensor_get_dtype(tensor_repeat_interleave(seq(TENSOR_I32, TENSOR_SHAPE(2)), 2, NULL)) == TENSOR_I32);
}

TEST(construct_diag_family_values) {
    tensor *v = test_tensor(TENSOR_F32, TENSOR_SHAPE(3), VALS(1, 2, 3));
    CHECK_T(tensor_diag(v, 1), TENSOR_SHAPE(4, 4), 0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3, 0, 0, 0, 0);
    CHECK_T(tensor_diag(v, -1), TENSOR_SHAPE(4, 4), 0, 0, 0, 0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3, 0);
    CHECK_T(tensor_diag(v, 0), TENSOR_SHAPE(3, 3), 1, 0, 0, 0, 2, 0, 0, 0, 3);
    tensor *y = seq(TENSOR_F32, TENSOR_SHAPE(3, 4));
    tensor *d = tensor_diag(y, 1);
    CHECK_T(d, TENSOR_SHAPE(3), 1, 6, 11);
    CHECK(!tensor_shares_storage(d, y)); /* torch.diag of a matrix is a copy */
    tensor *e = test_tensor(TENSOR_F32, TENSOR_SHAPE(2, 2), VALS(1, 2, 3, 4));
    CHECK_T(tensor_diag_embed(e, 1, 0, 2), TENSOR_SHAPE(3, 2, 3), 0, 1, 0, 0, 3, 0, 0, 0, 2, 0, 0, 4, 0, 0, 0, 0, 0, 0);
    CHECK_T(tensor_diag_embed(e, 0, -2, -1), TENSOR_SHAPE(2, 2, 2), 1, 0, 0, 2, 3, 0, 0, 4);
    CHECK_T(tensor_diagflat(e, -1), TENSOR_SHAPE(5, 5), 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 4, 0);
    CHECK_T(tensor_diagflat(tensor_scalar(5, TENSOR_I32), 0), TENSOR_SHAPE(1, 1), 5);
    tensor *b = test_tensor(TENSOR_BOOL, TENSOR_SHAPE(2), VALS(1, 0));
    tensor *db = tensor_diag(b, 0);
    CHECK(tensor_get_dtype(db) == TENSOR_BOOL);
    CHECK_VALUES(db, VALS(1, 0, 0, 0), 4, 0, 0);
    CHECK(tensor_get_dtype(tensor_diag(seq(TENSOR_I64, TENSOR_SHAPE(2)), 0)) == TENSOR_I64);
}

TEST(construct_stack_family_values) {
    tensor *a = test_tensor(TENSOR_F32, TENSOR_SHAPE(3), VALS(1, 2, 3)), *b = test_tensor(TENSOR_F32, TENSOR_SHAPE(3), VALS(4, 5, 6));
    tensor *ab[2] = {a, b};
    CHECK_T(tensor_hstack(2, ab), TENSOR_SHAPE(6), 1, 2, 3, 4, 5, 6);
    CHECK_T(tensor_vstack(2, ab), TENSOR_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    CHECK_T(tensor_dstack(2, ab), TENSOR_SHAPE(1, 3, 2), 1, 4, 2, 5, 3, 6);
    CHECK_T(tensor_column_stack(2, ab), TENSOR_SHAPE(3, 2), 1, 4, 2, 5, 3, 6);
    tensor *cs[3] = {a, seq(TENSOR_F32, TENSOR_SHAPE(3, 2)), tensor_expand(tensor_scalar(7, TENSOR_F32), TENSOR_SHAPE(3))};
    CHECK_T(tensor_column_stack(3, cs), TENSOR_SHAPE(3, 4), 1, 0, 1, 7, 2, 2, 3, 7, 3, 4, 5, 7);
    tensor *h2[2] = {seq(TENSOR_F32, TENSOR_SHAPE(2, 3)), tensor_ones(TENSOR_SHAPE(2, 1), TENSOR_I32)};
    tensor *h = tensor_hstack(2, h2);
    CHECK_T(h, TENSOR_SHAPE(2, 4), 0, 1, 2, 1, 3, 4, 5, 1);
    CHECK(tensor_get_dtype(h) == TENSOR_F32);
    tensor *sc[2] = {tensor_scalar(1, TENSOR_F32), tensor_scalar(2, TENSOR_F32)};
    CHECK_T(tensor_vstack(2, sc), TENSOR_SHAPE(2, 1), 1, 2);
    CHECK_T(tensor_hstack(2, sc), TENSOR_SHAPE(2), 1, 2);
    /* torch.block_diag(tensor(1.), tensor([2., 3.]), [[4, 5, 6], [7, 8, 9]], ones(0, 2)) */
    tensor *bl[4] = {tensor_scalar(1, TENSOR_F32), test_tensor(TENSOR_F32, TENSOR_SHAPE(2), VALS(2, 3)), test_tensor(TENSOR_F32, TENSOR_SHAPE(2, 3), VALS(4, 5, 6, 7, 8, 9)),
                     tensor_ones(TENSOR_SHAPE(0, 2), TENSOR_F32)};
    CHECK_T(tensor_block_diag(4, bl), TENSOR_SHAPE(4, 8), 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 4, 5, 6, 0, 0, 0, 0, 0, 7, 8, 9, 0, 0);
    tensor *mixed[2] = {tensor_scalar(1, TENSOR_I64), test_tensor(TENSOR_F32, TENSOR_SHAPE(2), VALS(2, 3))};
    CHECK(tensor_get_dtype(tensor_block_diag(2, mixed)) == TENSOR_F32);
}

/* ---- construction ---- */

TEST(construct_like_and_logspace_values) {
    tensor *x = tensor_transpose(seq(TENSOR_F64, TENSOR_SHAPE(2, 3)), 0, 1);
    tensor *z = tensor_zeros_like(x), *o = tensor_ones_like(x), *f = tensor_full_like(x, -2.5), *e = tensor_empty_like(x);
    CHECK_T(z, TENSOR_SHAPE(3, 2), 0, 0, 0, 0, 0, 0);
    CHECK_T(o, TENSOR_SHAPE(3, 2), 1, 1, 1, 1, 1, 1);
    CHECK_T(f, TENSOR_SHAPE(3, 2), -2.5, -2.5, -2.5, -2.5, -2.5, -2.5);
    CHECK_SHAPE(e, TENSOR_SHAPE(3, 2));
    CHECK(tensor_get_dtype(z) == TENSOR_F64 && tensor_get_dtype(e) == TENSOR_F64 && tensor_is_contiguous(e));
    CHECK(tensor_get_dtype(tensor_ones_like(seq(TENSOR_I32, TENSOR_SHAPE(2)))) == TENSOR_I32);
    tensor_manual_seed(3);
    tensor *r = tensor_rand_like(tensor_zeros(TENSOR_SHAPE(50), TENSOR_F32)), *n = tensor_randn_like(x);
    CHECK_SHAPE(r, TENSOR_SHAPE(50));
    CHECK_SHAPE(n, TENSOR_SHAPE(3, 2));
    CHECK(tensor_get_dtype(n) == TENSOR_F64);
    double *rv = test_values(r);
    bool in01 = true, varied = false;
    for (int i = 0; i < 50; i++) { in01 &= rv[i] >= 0 && rv[i] < 1; varied |= rv[i] != rv[0]; }
    free(rv);
    CHECK(in01 && varied);
    /* the same draws as tensor_rand of the same shape after the same seed */
    tensor_manual_seed(3);
    double *again = test_values(r);
    CHECK_VALUES(tensor_rand(TENSOR_SHAPE(50), TENSOR_F32), again, 50, 0, 0);
    free(again);
    /* torch.logspace */
    CHECK_T(tensor_logspace(-2, 2, 5, 10, TENSOR_F32), TENSOR_SHAPE(5), 0.009999999776482582, 0.10000000149011612, 1.0, 10.0, 100.0);
    tensor *l64 = tensor_logspace(-1.5, 2.5, 6, 10, TENSOR_F64);
    CHECK_SHAPE(l64, TENSOR_SHAPE(6));
    CHECK_VALUES(l64, VALS(0.03162277660168379, 0.19952623149688797, 1.2589254117941675, 7.943282347242813, 50.11872336272722, 316.22776601683796), 6, 0, 1e-14);
    CHECK_T(tensor_logspace(0, 10, 4, 2, TENSOR_I64), TENSOR_SHAPE(4), 1, 10, 101, 1024);
    CHECK_VALUES(tensor_logspace(0.5, 3, 4, 3, TENSOR_F32), VALS(1.7320507764816284, 4.326748847961426, 10.808432579040527, 27.0), 4, 0, 2e-7);
    CHECK_SHAPE(tensor_logspace(0, 1, 0, 10, TENSOR_F32), TENSOR_SHAPE(0));
    CHECK_T(tensor_logspace(3, 9, 1, 10, TENSOR_F64), TENSOR_SHAPE(1), 1000);
}

TEST(construct_tri_indices_values) {
    tensor *l = tensor_tril_indices(3, 4, 1, TENSOR_I64);
    CHECK_T(l, TENSOR_SHAPE(2, 9), 0, 0, 1, 1, 1, 2, 2, 2, 2, 0, 1, 0, 1, 2, 0, 1, 2, 3);
    CHECK(tensor_get_dtype(l) == TENSOR_I64);
    CHECK_T(tensor_triu_indices(4, 3, -1, TENSOR_I64), TENSOR_SHAPE(2, 9), 0, 0, 0, 1, 1, 1, 2, 2, 3, 0, 1, 2, 0, 1, 2, 1, 2, 2);
    CHECK_T(tensor_tril_indices(3, 3, -2, TENSOR_I32), TENSOR_SHAPE(2, 1), 2, 0);
    CHECK_SHAPE(tensor_triu_indices(2, 3, 5, TENSOR_I64), TENSOR_SHAPE(2, 0));
    CHECK_SHAPE(tensor_tril_indices(0, 3, 0, TENSOR_I64), TENSOR_SHAPE(2, 0));
    CHECK_SHAPE(tensor_tril_indices(3, 3, INT64_MAX, TENSOR_I64), TENSOR_SHAPE(2, 9));
    CHECK_SHAPE(tensor_triu_indices(3, 3, INT64_MIN, TENSOR_I64), TENSOR_SHAPE(2, 9));
    CHECK(tensor_get_dtype(tensor_tril_indices(2, 2, 0, TENSOR_I32)) == TENSOR_I32);
}

/* Composites and views of a tensor that requires grad record through the ops they are made of;
   the gradient of a few, checked against values written out. */
TEST(construct_grad_values) {
    tensor *x = tensor_set_requires_grad(seq(TENSOR_F64, TENSOR_SHAPE(3, 3)), true);
    CHECK(tensor_backward(tensor_sum_all(tensor_diagonal(x, 0, 0, 1))) == 0);
    CHECK_VALUES(tensor_grad(x), VALS(1, 0, 0, 0, 1, 0, 0, 0, 1), 9, 0, 0);
    tensor *y = tensor_set_requires_grad(seq(TENSOR_F64, TENSOR_SHAPE(5)), true);
    CHECK(tensor_backward(tensor_sum_all(tensor_unfold(y, 0, 3, 1))) == 0); /* windows [0..2], [1..3], [2..4] */
    CHECK_VALUES(tensor_grad(y), VALS(1, 2, 3, 2, 1), 5, 0, 0);
    tensor *z = tensor_set_requires_grad(seq(TENSOR_F64, TENSOR_SHAPE(4)), true);
    CHECK(tensor_backward(tensor_sum_all(tensor_as_strided(z, 2, (const int64_t[]){2, 2}, (const int64_t[]){1, 1}, 0))) == 0); /* 0 1 / 1 2 */
    CHECK_VALUES(tensor_grad(z), VALS(1, 2, 1, 0), 4, 0, 0);
    int d0 = 0;
    tensor *w = tensor_set_requires_grad(seq(TENSOR_F64, TENSOR_SHAPE(2)), true);
    CHECK(tensor_backward(tensor_sum_all(tensor_mul(tensor_repeat_interleave(w, 3, &d0), seq(TENSOR_F64, TENSOR_SHAPE(6))))) == 0);
    CHECK_VALUES(tensor_grad(w), VALS(0 + 1 + 2, 3 + 4 + 5), 2, 0, 0);
    /* as_strided refuses a non-contiguous input that requires grad (its gradient would go astray) */
    tensor *q = tensor_set_requires_grad(seq(TENSOR_F64, TENSOR_SHAPE(2, 2)), true);
    CHECK_BAD(tensor_as_strided(tensor_transpose(q, 0, 1), 1, (const int64_t[]){2}, (const int64_t[]){1}, -1), "tensor_as_strided");
    CHECK_BAD(tensor_as_strided(tensor_slice(tensor_reshape(q, 1, (const int64_t[]){4}), 0, 1, 3, 1), 1, (const int64_t[]){3}, (const int64_t[]){1}, -1),
              "tensor_as_strided");
    bool was = tensor_set_grad_enabled(false);
    CHECK(tensor_as_strided(tensor_transpose(q, 0, 1), 1, (const int64_t[]){2}, (const int64_t[]){1}, -1) != NULL);
    tensor_set_grad_enabled(was);
}

/* ---- gradient checks (the registry sweep of tests/test_autograd.c calls gradcheck_NAME) ---- */

typedef struct gargs gargs;
typedef tensor *(*g_one)(tensor *x, const gargs *a);
struct gargs {
    g_one call;                   /* one-input ops: the op on the (arranged) leaf */
    int list;                     /* list ops: which one (see f_list) */
    bool transposed, squared;     /* leaf seen transposed (dims 0 and last); f returns op(...)^2 */
    int i0, i1, n;
    int64_t k0, k1;
    int dims[TENSOR_MAX_DIMS];
    int64_t v[TENSOR_MAX_DIMS], w[TENSOR_MAX_DIMS];
};
static tensor *arranged(tensor *x, const gargs *a) { return a->transposed && tensor_ndim(x) > 1 ? tensor_transpose(x, 0, tensor_ndim(x) - 1) : x; }
static tensor *f_one(tensor *const *in, const void *ctx) {
    const gargs *a = (const gargs *)ctx;
    tensor *r = a->call(arranged(in[0], a), a);
    return a->squared ? tensor_square(r) : r;
}
/* A leaf whose arranged view has `shape`. */
static tensor *leaf_as(bool transposed, int ndim, const int64_t *shape) {
    int64_t s[TENSOR_MAX_DIMS];
    for (int i = 0; i < ndim; i++) s[i] = shape[i];
    if (transposed && ndim > 1) { s[0] = shape[ndim - 1]; s[ndim - 1] = shape[0]; }
    return test_leaf(ndim, s, -1, 1);
}
static void gcase(int line, const char *label, gargs a, int ndim, const int64_t *shape, bool twice) {
    tensor *x = leaf_as(a.transposed, ndim, shape);
    char where[200];
    snprintf(where, sizeof where, "%s (%s, %d-D%s)", __FILE__, label, ndim, a.transposed ? " transposed" : "");
    int got = test_gradcheck(where, line, f_one, &a, 1, &x, 1e-6, 1e-5);
    if (got != tensor_numel(x)) test_fail(where, line, "gradcheck compared %d elements, expected %lld", got, (long long)tensor_numel(x));
    if (twice) {
        a.squared = true;
        test_gradgradcheck(where, line, f_one, &a, 1, &x, 1e-5, 1e-4);
    }
}
#define GCASE(fn_, shape_args, twice, ...) do { gargs a_ = {.call = fn_, __VA_ARGS__}; gcase(__LINE__, #fn_, a_, shape_args, twice); } while (0)

static tensor *c_movedim(tensor *x, const gargs *a) { return tensor_movedim(x, a->i0, a->i1); }
static tensor *c_movedim_dims(tensor *x, const gargs *a) { return tensor_movedim_dims(x, a->n, a->dims, a->dims + 4); }
static tensor *c_swapaxes(tensor *x, const gargs *a) { return tensor_swapaxes(x, a->i0, a->i1); }
static tensor *c_broadcast_to(tensor *x, const gargs *a) { return tensor_broadcast_to(x, a->n, a->v); }
static tensor *c_expand_as(tensor *x, const gargs *a) { return tensor_expand_as(x, tensor_zeros(a->n, a->v, TENSOR_F64)); }
static tensor *c_reshape_as(tensor *x, const gargs *a) { return tensor_reshape_as(x, tensor_zeros(a->n, a->v, TENSOR_F64)); }
static tensor *c_unflatten(tensor *x, const gargs *a) { return tensor_unflatten(x, a->i0, a->n, a->v); }
static tensor *c_narrow(tensor *x, const gargs *a) { return tensor_narrow(x, a->i0, a->k0, a->k1); }
static tensor *c_as_strided(tensor *x, const gargs *a) { return tensor_as_strided(tensor_contiguous(x), a->n, a->v, a->w, a->k0); }
static tensor *c_unfold(tensor *x, const gargs *a) { return tensor_unfold(x, a->i0, a->k0, a->k1); }
static tensor *c_diagonal(tensor *x, const gargs *a) { return tensor_diagonal(x, a->k0, a->i0, a->i1); }
static tensor *c_atleast_1d(tensor *x, const gargs *a) { (void)a; return tensor_atleast_1d(x); }
static tensor *c_atleast_2d(tensor *x, const gargs *a) { (void)a; return tensor_atleast_2d(x); }
static tensor *c_atleast_3d(tensor *x, const gargs *a) { (void)a; return tensor_atleast_3d(x); }
static tensor *c_flip_dims(tensor *x, const gargs *a) { return tensor_flip_dims(x, a->n, a->dims); }
static tensor *c_fliplr(tensor *x, const gargs *a) { (void)a; return tensor_fliplr(x); }
static tensor *c_flipud(tensor *x, const gargs *a) { (void)a; return tensor_flipud(x); }
static tensor *c_roll(tensor *x, const gargs *a) { return tensor_roll(x, a->n, a->v, a->i0 ? a->dims : NULL); }
static tensor *c_rot90(tensor *x, const gargs *a) { return tensor_rot90(x, (int)a->k0, a->i0, a->i1); }
static tensor *c_tile(tensor *x, const gargs *a) { return tensor_tile(x, a->n, a->v); }
static tensor *c_repeat_interleave(tensor *x, const gargs *a) { return tensor_repeat_interleave(x, a->k0, a->n ? &a->i0 : NULL); }
static tensor *c_diag(tensor *x, const gargs *a) { return tensor_diag(x, a->k0); }
static tensor *c_diag_embed(tensor *x, const gargs *a) { return tensor_diag_embed(x, a->k0, a->i0, a->i1); }
static tensor *c_diagflat(tensor *x, const gargs *a) { return tensor_diagflat(x, a->k0); }

void gradcheck_movedim(void) {
    GCASE(c_movedim, TENSOR_SHAPE(2, 3, 4), true, .i0 = 0, .i1 = -1);
    GCASE(c_movedim, TENSOR_SHAPE(2, 3, 4), false, .i0 = 2, .i1 = 1, .transposed = true);
}
void gradcheck_movedim_dims(void) {
    GCASE(c_movedim_dims, TENSOR_SHAPE(2, 3, 4), true, .n = 2, .dims = {0, 1, 0, 0, 2, 0});
    GCASE(c_movedim_dims, TENSOR_SHAPE(2, 3, 4), false, .n = 1, .dims = {-1, 0, 0, 0, 0}, .transposed = true);
}
void gradcheck_swapaxes(void) {
    GCASE(c_swapaxes, TENSOR_SHAPE(2, 3, 4), true, .i0 = 0, .i1 = 2);
    GCASE(c_swapaxes, TENSOR_SHAPE(3, 4), false, .i0 = -1, .i1 = 0, .transposed = true);
}
void gradcheck_broadcast_to(void) {
    GCASE(c_broadcast_to, TENSOR_SHAPE(3, 1), true, .n = 3, .v = {2, 3, 4});
    GCASE(c_broadcast_to, SCALAR_SHAPE, false, .n = 2, .v = {2, 2});
}
void gradcheck_expand_as(void) { GCASE(c_expand_as, TENSOR_SHAPE(1, 3), true, .n = 3, .v = {2, 4, 3}, .transposed = true); }
void gradcheck_reshape_as(void) {
    GCASE(c_reshape_as, TENSOR_SHAPE(3, 4), true, .n = 2, .v = {2, 6});
    GCASE(c_reshape_as, TENSOR_SHAPE(3, 4), false, .n = 2, .v = {6, 2}, .transposed = true);
}
void gradcheck_unflatten(void) {
    GCASE(c_unflatten, TENSOR_SHAPE(2, 6), true, .i0 = 1, .n = 2, .v = {3, -1});
    GCASE(c_unflatten, TENSOR_SHAPE(4, 3), false, .i0 = 0, .n = 2, .v = {2, 2}, .transposed = true);
}
void gradcheck_narrow(void) {
    GCASE(c_narrow, TENSOR_SHAPE(4, 5), true, .i0 = 1, .k0 = 1, .k1 = 3);
    GCASE(c_narrow, TENSOR_SHAPE(4, 5), false, .i0 = 0, .k0 = -2, .k1 = 2, .transposed = true);
}
void gradcheck_as_strided(void) {
    /* overlapping windows (elements used twice), a gap, an offset; a transposed leaf made contiguous first */
    GCASE(c_as_strided, TENSOR_SHAPE(9), true, .n = 2, .v = {3, 3}, .w = {2, 1}, .k0 = 0);
    GCASE(c_as_strided, TENSOR_SHAPE(3, 4), true, .n = 2, .v = {2, 2}, .w = {1, 4}, .k0 = 3, .transposed = true);
    GCASE(c_as_strided, TENSOR_SHAPE(2, 3), false, .n = 0, .k0 = 5);
}
void gradcheck_unfold(void) {
    GCASE(c_unfold, TENSOR_SHAPE(7), true, .i0 = 0, .k0 = 3, .k1 = 2);
    GCASE(c_unfold, TENSOR_SHAPE(3, 5), true, .i0 = -1, .k0 = 2, .k1 = 1, .transposed = true);
    GCASE(c_unfold, TENSOR_SHAPE(4, 3), false, .i0 = 0, .k0 = 4, .k1 = 3);
    GCASE(c_unfold, SCALAR_SHAPE, false, .i0 = 0, .k0 = 1, .k1 = 1);
}
void gradcheck_diagonal(void) {
    GCASE(c_diagonal, TENSOR_SHAPE(3, 4), true, .k0 = 1, .i0 = 0, .i1 = 1);
    GCASE(c_diagonal, TENSOR_SHAPE(3, 4), true, .k0 = -1, .i0 = 1, .i1 = 0, .transposed = true);
    GCASE(c_diagonal, TENSOR_SHAPE(2, 3, 4), false, .k0 = 0, .i0 = 0, .i1 = 2);
    GCASE(c_diagonal, TENSOR_SHAPE(3, 3), false, .k0 = 5, .i0 = 0, .i1 = 1); /* empty */
}
void gradcheck_atleast_1d(void) { GCASE(c_atleast_1d, SCALAR_SHAPE, true); GCASE(c_atleast_1d, TENSOR_SHAPE(2, 3), false, .transposed = true); }
void gradcheck_atleast_2d(void) { GCASE(c_atleast_2d, TENSOR_SHAPE(3), true); GCASE(c_atleast_2d, SCALAR_SHAPE, false); }
void gradcheck_atleast_3d(void) { GCASE(c_atleast_3d, TENSOR_SHAPE(2, 3), true, .transposed = true); GCASE(c_atleast_3d, TENSOR_SHAPE(3), false); }
void gradcheck_flip_dims(void) {
    GCASE(c_flip_dims, TENSOR_SHAPE(2, 3, 4), true, .n = 2, .dims = {0, -1});
    GCASE(c_flip_dims, TENSOR_SHAPE(3, 4), false, .n = 0, .transposed = true);
}
void gradcheck_fliplr(void) { GCASE(c_fliplr, TENSOR_SHAPE(3, 4), true, .transposed = true); }
void gradcheck_flipud(void) { GCASE(c_flipud, TENSOR_SHAPE(3, 4), true); }
void gradcheck_roll(void) {
    GCASE(c_roll, TENSOR_SHAPE(3, 4), true, .n = 2, .v = {1, -5}, .i0 = 1, .dims = {0, 1});
    GCASE(c_roll, TENSOR_SHAPE(3, 4), false, .n = 1, .v = {5}, .i0 = 0, .transposed = true); /* flattened */
}
void gradcheck_rot90(void) {
    GCASE(c_rot90, TENSOR_SHAPE(2, 3), true, .k0 = 1, .i0 = 0, .i1 = 1);
    GCASE(c_rot90, TENSOR_SHAPE(2, 3, 2), false, .k0 = -1, .i0 = 2, .i1 = 0, .transposed = true);
    GCASE(c_rot90, TENSOR_SHAPE(2, 3), false, .k0 = 2, .i0 = 1, .i1 = 0);
}
void gradcheck_tile(void) {
    GCASE(c_tile, TENSOR_SHAPE(2, 3), true, .n = 1, .v = {2});
    GCASE(c_tile, TENSOR_SHAPE(2, 3), false, .n = 3, .v = {2, 1, 2}, .transposed = true);
}
void gradcheck_repeat_interleave(void) {
    GCASE(c_repeat_interleave, TENSOR_SHAPE(2, 3), true, .k0 = 2, .n = 0);
    GCASE(c_repeat_interleave, TENSOR_SHAPE(2, 3), false, .k0 = 3, .n = 1, .i0 = -1, .transposed = true);
    GCASE(c_repeat_interleave, SCALAR_SHAPE, false, .k0 = 2, .n = 1, .i0 = 0);
}
void gradcheck_diag(void) {
    GCASE(c_diag, TENSOR_SHAPE(3), true, .k0 = 1);
    GCASE(c_diag, TENSOR_SHAPE(3, 4), true, .k0 = -1, .transposed = true);
}
void gradcheck_diag_embed(void) {
    GCASE(c_diag_embed, TENSOR_SHAPE(2, 3), true, .k0 = 1, .i0 = 0, .i1 = 2);
    GCASE(c_diag_embed, TENSOR_SHAPE(2, 3), false, .k0 = -2, .i0 = -1, .i1 = -2, .transposed = true);
}
void gradcheck_diagflat(void) { GCASE(c_diagflat, TENSOR_SHAPE(2, 2), true, .k0 = -1, .transposed = true); }

/* The list ops on n leaves (the first transposed when asked). */
static tensor *f_list(tensor *const *in, const void *ctx) {
    const gargs *a = (const gargs *)ctx;
    tensor *xs[4];
    for (int i = 0; i < a->n; i++) xs[i] = i == 0 ? arranged(in[0], a) : in[i];
    tensor *r = NULL;
    switch (a->list) {
    case 0: r = tensor_hstack(a->n, xs); break;
    case 1: r = tensor_vstack(a->n, xs); break;
    case 2: r = tensor_dstack(a->n, xs); break;
    case 3: r = tensor_column_stack(a->n, xs); break;
    case 4: r = tensor_cartesian_prod(a->n, xs); break;
    default: r = tensor_block_diag(a->n, xs); break;
    }
    return a->squared ? tensor_square(r) : r;
}
/* n leaves of the shapes given as (ndim, d0, d1) triples in a->v... packed: shapes[i] */
static void lcase(int line, const char *label, gargs a, const int64_t shapes[][3], bool twice) {
    tensor *in[4];
    for (int i = 0; i < a.n; i++) in[i] = leaf_as(i == 0 && a.transposed, (int)shapes[i][0], shapes[i] + 1);
    char where[200];
    snprintf(where, sizeof where, "%s (%s of %d)", __FILE__, label, a.n);
    test_gradcheck(where, line, f_list, &a, a.n, in, 1e-6, 1e-5);
    if (twice) {
        a.squared = true;
        test_gradgradcheck(where, line, f_list, &a, a.n, in, 1e-5, 1e-4);
    }
}
#define LCASE(label, twice, shapes_, ...) do { gargs a_ = {__VA_ARGS__}; static const int64_t s_[][3] = shapes_; lcase(__LINE__, label, a_, s_, twice); } while (0)
#define SHAPES(...) {__VA_ARGS__}
void gradcheck_hstack(void) {
    LCASE("hstack", true, SHAPES({2, 2, 3}, {2, 2, 1}), .list = 0, .n = 2, .transposed = true);
    LCASE("hstack", false, SHAPES({1, 3, 0}, {0, 0, 0}), .list = 0, .n = 2);
}
void gradcheck_vstack(void) { LCASE("vstack", true, SHAPES({1, 3, 0}, {2, 2, 3}), .list = 1, .n = 2); }
void gradcheck_dstack(void) { LCASE("dstack", true, SHAPES({2, 2, 3}, {2, 2, 3}), .list = 2, .n = 2, .transposed = true); }
void gradcheck_column_stack(void) { LCASE("column_stack", true, SHAPES({1, 3, 0}, {2, 3, 2}, {1, 3, 0}), .list = 3, .n = 3); }
void gradcheck_cartesian_prod(void) {
    LCASE("cartesian_prod", true, SHAPES({1, 2, 0}, {1, 3, 0}), .list = 4, .n = 2);
    LCASE("cartesian_prod", false, SHAPES({1, 3, 0}), .list = 4, .n = 1);
}
void gradcheck_block_diag(void) {
    LCASE("block_diag", true, SHAPES({2, 2, 3}, {0, 0, 0}, {1, 2, 0}), .list = 5, .n = 3, .transposed = true);
}

/* Several outputs: each piece scaled by its position, then concatenated back, so a piece taken from
   the wrong place gets the wrong gradient. */
static tensor *f_pieces(tensor *const *in, const void *ctx) {
    const gargs *a = (const gargs *)ctx;
    tensor *x = arranged(in[0], a), *out[8] = {NULL}, *scaled[8];
    int n = -1, dim = a->i0;
    switch (a->list) {
    case 0: n = tensor_chunk(x, (int)a->k0, dim, out, 8); break;
    case 1: n = tensor_tensor_split(x, a->k0, dim, out, 8); break;
    case 2: n = tensor_tensor_split_indices(x, a->n, a->v, dim, out, 8); break;
    default: n = tensor_unbind(x, dim, out, 8); dim = -1; break;
    }
    if (n <= 0) return NULL;
    for (int i = 0; i < n; i++) scaled[i] = tensor_mul_scalar(a->list == 3 ? tensor_unsqueeze(out[i], -1) : out[i], i + 1);
    tensor *r = tensor_cat(n, scaled, dim);
    return a->squared ? tensor_square(r) : r;
}
TEST(construct_gradcheck_several_outputs) {
    gargs cases[] = {
        {.list = 0, .k0 = 3, .i0 = 0},                        /* chunk [5, 3] in 3 along dim 0 */
        {.list = 0, .k0 = 2, .i0 = -1, .transposed = true},
        {.list = 1, .k0 = 3, .i0 = 1},                        /* tensor_split sections */
        {.list = 2, .n = 3, .v = {1, -1, 4}, .i0 = 0},        /* tensor_split indices (one piece empty) */
        {.list = 3, .i0 = 1, .transposed = true},             /* unbind */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tensor *x = leaf_as(cases[i].transposed, TENSOR_SHAPE(5, 3));
        GRADCHECK(f_pieces, &cases[i], 1, &x);
        gargs sq = cases[i];
        sq.squared = true;
        GRADGRADCHECK(f_pieces, &sq, 1, &x);
    }
    /* meshgrid and broadcast_tensors: gradients sum over the broadcast dims */
    tensor *a = test_leaf(TENSOR_SHAPE(3), -1, 1), *b = test_leaf(TENSOR_SHAPE(2), -1, 1), *g[2];
    tensor *ab[2] = {a, b};
    CHECK(tensor_meshgrid(2, ab, "xy", g) == 2);
    CHECK(tensor_backward(tensor_sum_all(tensor_add(tensor_mul_scalar(g[0], 2), tensor_mul_scalar(g[1], 3)))) == 0);
    CHECK_VALUES(tensor_grad(a), VALS(4, 4, 4), 3, 0, 0);
    CHECK_VALUES(tensor_grad(b), VALS(9, 9), 2, 0, 0);
    tensor *c = test_leaf(TENSOR_SHAPE(3, 1), -1, 1), *d = test_leaf(TENSOR_SHAPE(4), -1, 1), *o[2];
    tensor *cd[2] = {c, d};
    CHECK(tensor_broadcast_tensors(2, cd, o) == 2);
    CHECK(tensor_backward(tensor_sum_all(tensor_mul(o[0], o[1]))) == 0);
    double sum_d = tensor_item(tensor_sum_all(tensor_detach(d)));
    CHECK_VALUES(tensor_grad(c), VALS(sum_d, sum_d, sum_d), 3, 1e-12, 1e-12);
}

/* ---- bad inputs (tests/test_registry.c calls bad_input_NAME) ---- */

void bad_input_movedim(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    CHECK_BAD(tensor_movedim(NULL, 0, 1), "tensor_movedim");
    CHECK_BAD(tensor_movedim(a, 2, 0), "tensor_movedim");
    CHECK_BAD(tensor_movedim(a, 0, -3), "tensor_movedim");
}
void bad_input_movedim_dims(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3, 4), TENSOR_F32);
    CHECK_BAD(tensor_movedim_dims(NULL, 1, (const int[]){0}, (const int[]){1}), "tensor_movedim_dims");
    CHECK_BAD(tensor_movedim_dims(a, 2, (const int[]){0, 0}, (const int[]){1, 2}), "tensor_movedim_dims");
    CHECK_BAD(tensor_movedim_dims(a, 2, (const int[]){0, 1}, (const int[]){2, -1}), "tensor_movedim_dims");
    CHECK_BAD(tensor_movedim_dims(a, 4, (const int[]){0, 1, 2, 0}, (const int[]){0, 1, 2, 0}), "tensor_movedim_dims");
    CHECK_BAD(tensor_movedim_dims(a, 1, NULL, (const int[]){0}), "tensor_movedim_dims");
    CHECK_BAD(tensor_movedim_dims(a, -1, NULL, NULL), "tensor_movedim_dims");
}
void bad_input_swapaxes(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    CHECK_BAD(tensor_swapaxes(NULL, 0, 1), "tensor_swapaxes");
    CHECK_BAD(tensor_swapaxes(a, 0, 2), "tensor_swapaxes");
    CHECK_BAD(tensor_swapaxes(a, -3, 0), "tensor_swapaxes");
}
void bad_input_broadcast_to(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    CHECK_BAD(tensor_broadcast_to(NULL, TENSOR_SHAPE(2, 3)), "tensor_broadcast_to");
    CHECK_BAD(tensor_broadcast_to(a, TENSOR_SHAPE(3)), "tensor_broadcast_to");
    CHECK_BAD(tensor_broadcast_to(a, TENSOR_SHAPE(4, 3)), "tensor_broadcast_to");
    CHECK_BAD(tensor_broadcast_to(a, 2, NULL), "tensor_broadcast_to");
}
void bad_input_expand_as(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32), *b = tensor_zeros(TENSOR_SHAPE(3, 3), TENSOR_F32);
    CHECK_BAD(tensor_expand_as(NULL, a), "tensor_expand_as");
    CHECK_BAD(tensor_expand_as(a, NULL), "tensor_expand_as");
    CHECK_BAD(tensor_expand_as(a, b), "tensor_expand_as");
}
void bad_input_reshape_as(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32), *b = tensor_zeros(TENSOR_SHAPE(3, 3), TENSOR_F32);
    CHECK_BAD(tensor_reshape_as(NULL, a), "tensor_reshape_as");
    CHECK_BAD(tensor_reshape_as(a, NULL), "tensor_reshape_as");
    CHECK_BAD(tensor_reshape_as(a, b), "tensor_reshape_as");
}
void bad_input_unflatten(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 6), TENSOR_F32), *s = tensor_scalar(1, TENSOR_F32);
    CHECK_BAD(tensor_unflatten(NULL, 1, 2, (const int64_t[]){2, 3}), "tensor_unflatten");
    CHECK_BAD(tensor_unflatten(a, 1, 2, (const int64_t[]){4, 2}), "tensor_unflatten");
    CHECK_BAD(tensor_unflatten(a, 1, 2, (const int64_t[]){-1, 4}), "tensor_unflatten");
    CHECK_BAD(tensor_unflatten(a, 1, 2, (const int64_t[]){-1, -1}), "tensor_unflatten");
    CHECK_BAD(tensor_unflatten(a, 1, 2, (const int64_t[]){-2, -3}), "tensor_unflatten");
    CHECK_BAD(tensor_unflatten(a, 2, 2, (const int64_t[]){2, 3}), "tensor_unflatten");
    CHECK_BAD(tensor_unflatten(a, 1, 0, (const int64_t[]){6}), "tensor_unflatten");
    CHECK_BAD(tensor_unflatten(a, 1, 2, NULL), "tensor_unflatten");
    CHECK_BAD(tensor_unflatten(s, 0, 1, (const int64_t[]){1}), "tensor_unflatten");
    CHECK_BAD(tensor_unflatten(a, 1, 8, (const int64_t[]){1, 1, 1, 1, 1, 1, 2, 3}), "tensor_unflatten");
}
void bad_input_narrow(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 5), TENSOR_F32), *s = tensor_scalar(1, TENSOR_F32);
    CHECK_BAD(tensor_narrow(NULL, 0, 0, 1), "tensor_narrow");
    CHECK_BAD(tensor_narrow(s, 0, 0, 1), "tensor_narrow");
    CHECK_BAD(tensor_narrow(a, 2, 0, 1), "tensor_narrow");
    CHECK_BAD(tensor_narrow(a, 1, 6, 0), "tensor_narrow");
    CHECK_BAD(tensor_narrow(a, 1, -6, 1), "tensor_narrow");
    CHECK_BAD(tensor_narrow(a, 1, 3, 3), "tensor_narrow");
    CHECK_BAD(tensor_narrow(a, 1, 0, -1), "tensor_narrow");
    CHECK_BAD(tensor_narrow(a, 1, 1, INT64_MAX), "tensor_narrow");
}
void bad_input_as_strided(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(9), TENSOR_F32);
    CHECK_BAD(tensor_as_strided(NULL, 1, (const int64_t[]){2}, (const int64_t[]){1}, 0), "tensor_as_strided");
    CHECK_BAD(tensor_as_strided(a, 1, (const int64_t[]){10}, (const int64_t[]){1}, 0), "tensor_as_strided");
    CHECK_BAD(tensor_as_strided(a, 2, (const int64_t[]){3, 3}, (const int64_t[]){3, 1}, 1), "tensor_as_strided");
    CHECK_BAD(tensor_as_strided(a, 1, (const int64_t[]){-1}, (const int64_t[]){1}, 0), "tensor_as_strided");
    CHECK_BAD(tensor_as_strided(a, 1, (const int64_t[]){2}, (const int64_t[]){-1}, 4), "tensor_as_strided");
    CHECK_BAD(tensor_as_strided(a, 1, NULL, NULL, 0), "tensor_as_strided");
    CHECK_BAD(tensor_as_strided(a, 9, (const int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1}, (const int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1}, 0), "tensor_as_strided");
    CHECK_BAD(tensor_as_strided(a, 2, (const int64_t[]){2, 2}, (const int64_t[]){INT64_MAX, 1}, 0), "tensor_as_strided");
    CHECK_BAD(tensor_as_strided(a, 1, (const int64_t[]){1}, (const int64_t[]){1}, INT64_MAX), "tensor_as_strided");
}
void bad_input_unfold(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 5), TENSOR_F32);
    CHECK_BAD(tensor_unfold(NULL, 0, 1, 1), "tensor_unfold");
    CHECK_BAD(tensor_unfold(a, 2, 1, 1), "tensor_unfold");
    CHECK_BAD(tensor_unfold(a, 1, 6, 1), "tensor_unfold");
    CHECK_BAD(tensor_unfold(a, 1, -1, 1), "tensor_unfold");
    CHECK_BAD(tensor_unfold(a, 1, 2, 0), "tensor_unfold");
    CHECK_BAD(tensor_unfold(tensor_scalar(1, TENSOR_F32), 0, 2, 1), "tensor_unfold");
    CHECK_BAD(tensor_unfold(tensor_zeros(TENSOR_SHAPE(1, 1, 1, 1, 1, 1, 1, 1), TENSOR_F32), 0, 1, 1), "tensor_unfold");
}
void bad_input_diagonal(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 5), TENSOR_F32);
    CHECK_BAD(tensor_diagonal(NULL, 0, 0, 1), "tensor_diagonal");
    CHECK_BAD(tensor_diagonal(tensor_zeros(TENSOR_SHAPE(3), TENSOR_F32), 0, 0, 1), "tensor_diagonal");
    CHECK_BAD(tensor_diagonal(a, 0, 0, 0), "tensor_diagonal");
    CHECK_BAD(tensor_diagonal(a, 0, 0, -2), "tensor_diagonal");
    CHECK_BAD(tensor_diagonal(a, 0, 0, 2), "tensor_diagonal");
}
void bad_input_atleast_1d(void) { CHECK_BAD(tensor_atleast_1d(NULL), "tensor_atleast_1d"); }
void bad_input_atleast_2d(void) { CHECK_BAD(tensor_atleast_2d(NULL), "tensor_atleast_2d"); }
void bad_input_atleast_3d(void) { CHECK_BAD(tensor_atleast_3d(NULL), "tensor_atleast_3d"); }
void bad_input_flip_dims(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    CHECK_BAD(tensor_flip_dims(NULL, 1, (const int[]){0}), "tensor_flip_dims");
    CHECK_BAD(tensor_flip_dims(a, 2, (const int[]){0, -2}), "tensor_flip_dims");
    CHECK_BAD(tensor_flip_dims(a, 1, (const int[]){2}), "tensor_flip_dims");
    CHECK_BAD(tensor_flip_dims(a, 1, NULL), "tensor_flip_dims");
    CHECK_BAD(tensor_flip_dims(a, 3, (const int[]){0, 1, 0}), "tensor_flip_dims");
}
void bad_input_fliplr(void) {
    CHECK_BAD(tensor_fliplr(NULL), "tensor_fliplr");
    CHECK_BAD(tensor_fliplr(tensor_zeros(TENSOR_SHAPE(3), TENSOR_F32)), "tensor_fliplr");
}
void bad_input_flipud(void) {
    CHECK_BAD(tensor_flipud(NULL), "tensor_flipud");
    CHECK_BAD(tensor_flipud(tensor_scalar(1, TENSOR_F32)), "tensor_flipud");
}
void bad_input_roll(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    CHECK_BAD(tensor_roll(NULL, 1, (const int64_t[]){1}, NULL), "tensor_roll");
    CHECK_BAD(tensor_roll(a, 1, NULL, NULL), "tensor_roll");
    CHECK_BAD(tensor_roll(a, 2, (const int64_t[]){1, 1}, NULL), "tensor_roll");
    CHECK_BAD(tensor_roll(a, 1, (const int64_t[]){1}, (const int[]){2}), "tensor_roll");
    CHECK_BAD(tensor_roll(a, 0, (const int64_t[]){1}, (const int[]){0}), "tensor_roll");
    CHECK_BAD(tensor_roll(tensor_scalar(1, TENSOR_F32), 1, (const int64_t[]){1}, (const int[]){0}), "tensor_roll");
}
void bad_input_rot90(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    CHECK_BAD(tensor_rot90(NULL, 1, 0, 1), "tensor_rot90");
    CHECK_BAD(tensor_rot90(tensor_zeros(TENSOR_SHAPE(3), TENSOR_F32), 1, 0, 1), "tensor_rot90");
    CHECK_BAD(tensor_rot90(a, 1, 0, 0), "tensor_rot90");
    CHECK_BAD(tensor_rot90(a, 1, 0, -2), "tensor_rot90");
    CHECK_BAD(tensor_rot90(a, 1, 0, 2), "tensor_rot90");
}
void bad_input_tile(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    CHECK_BAD(tensor_tile(NULL, 1, (const int64_t[]){2}), "tensor_tile");
    CHECK_BAD(tensor_tile(a, 1, (const int64_t[]){-1}), "tensor_tile");
    CHECK_BAD(tensor_tile(a, 1, NULL), "tensor_tile");
    CHECK_BAD(tensor_tile(a, 9, (const int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1}), "tensor_tile");
    CHECK_BAD(tensor_tile(a, 2, (const int64_t[]){INT64_MAX / 2, 2}), "tensor_tile");
}
void bad_input_repeat_interleave(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    int d2 = 2;
    CHECK_BAD(tensor_repeat_interleave(NULL, 2, NULL), "tensor_repeat_interleave");
    CHECK_BAD(tensor_repeat_interleave(a, -1, NULL), "tensor_repeat_interleave");
    CHECK_BAD(tensor_repeat_interleave(a, 2, &d2), "tensor_repeat_interleave");
    CHECK_BAD(tensor_repeat_interleave(a, INT64_MAX / 2, NULL), "tensor_repeat_interleave");
}
void bad_input_diag(void) {
    CHECK_BAD(tensor_diag(NULL, 0), "tensor_diag");
    CHECK_BAD(tensor_diag(tensor_scalar(1, TENSOR_F32), 0), "tensor_diag");
    CHECK_BAD(tensor_diag(tensor_zeros(TENSOR_SHAPE(2, 2, 2), TENSOR_F32), 0), "tensor_diag");
    CHECK_BAD(tensor_diag(tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), INT64_MAX), "tensor_diag");
}
void bad_input_diag_embed(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    CHECK_BAD(tensor_diag_embed(NULL, 0, -2, -1), "tensor_diag_embed");
    CHECK_BAD(tensor_diag_embed(tensor_scalar(1, TENSOR_F32), 0, -2, -1), "tensor_diag_embed");
    CHECK_BAD(tensor_diag_embed(a, 0, 1, 1), "tensor_diag_embed");
    CHECK_BAD(tensor_diag_embed(a, 0, 0, 3), "tensor_diag_embed");
    CHECK_BAD(tensor_diag_embed(a, 0, -1, 2), "tensor_diag_embed");
    CHECK_BAD(tensor_diag_embed(tensor_zeros(TENSOR_SHAPE(1, 1, 1, 1, 1, 1, 1, 1), TENSOR_F32), 0, 0, 1), "tensor_diag_embed");
    CHECK_BAD(tensor_diag_embed(a, INT64_MIN, 0, 1), "tensor_diag_embed");
}
void bad_input_diagflat(void) {
    CHECK_BAD(tensor_diagflat(NULL, 0), "tensor_diagflat");
    CHECK_BAD(tensor_diagflat(tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), INT64_MAX), "tensor_diagflat");
}
static void bad_list(tensor *(*f)(int, tensor *const *), const char *fn, bool check_shapes) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32), *b = tensor_zeros(TENSOR_SHAPE(3, 4), TENSOR_F32);
    tensor *an[2] = {a, NULL}, *ab[2] = {a, b};
    CHECK_BAD(f(2, NULL), fn);
    CHECK_BAD(f(0, ab), fn);
    CHECK_BAD(f(2, an), fn);
    if (check_shapes) CHECK_BAD(f(2, ab), fn);
}
void bad_input_hstack(void) { bad_list(tensor_hstack, "tensor_hstack", true); }
void bad_input_vstack(void) { bad_list(tensor_vstack, "tensor_vstack", true); }
void bad_input_dstack(void) { bad_list(tensor_dstack, "tensor_dstack", true); }
void bad_input_column_stack(void) { bad_list(tensor_column_stack, "tensor_column_stack", true); }
void bad_input_cartesian_prod(void) {
    bad_list(tensor_cartesian_prod, "tensor_cartesian_prod", true); /* 2-D inputs */
    tensor *v = tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), *w = tensor_zeros(TENSOR_SHAPE(2), TENSOR_I64);
    tensor *vw[2] = {v, w}, *nine[9] = {v, v, v, v, v, v, v, v, v};
    CHECK_BAD(tensor_cartesian_prod(2, vw), "tensor_cartesian_prod"); /* dtypes differ */
    CHECK_BAD(tensor_cartesian_prod(9, nine), "tensor_cartesian_prod");
}
void bad_input_block_diag(void) {
    bad_list(tensor_block_diag, "tensor_block_diag", false);
    tensor *c = tensor_zeros(TENSOR_SHAPE(2, 2, 2), TENSOR_F32);
    CHECK_BAD(tensor_block_diag(1, &c), "tensor_block_diag");
}
void bad_input_zeros_like(void) { CHECK_BAD(tensor_zeros_like(NULL), "tensor_zeros_like"); }
void bad_input_ones_like(void) { CHECK_BAD(tensor_ones_like(NULL), "tensor_ones_like"); }
void bad_input_full_like(void) {
    CHECK_BAD(tensor_full_like(NULL, 1), "tensor_full_like");
    CHECK_BAD(tensor_full_like(tensor_zeros(TENSOR_SHAPE(2), TENSOR_U8), 300), "tensor_full_like");
}
void bad_input_empty_like(void) { CHECK_BAD(tensor_empty_like(NULL), "tensor_empty_like"); }
void bad_input_rand_like(void) {
    CHECK_BAD(tensor_rand_like(NULL), "tensor_rand_like");
    CHECK_BAD(tensor_rand_like(tensor_zeros(TENSOR_SHAPE(2), TENSOR_I64)), "tensor_rand_like");
}
void bad_input_randn_like(void) {
    CHECK_BAD(tensor_randn_like(NULL), "tensor_randn_like");
    CHECK_BAD(tensor_randn_like(tensor_zeros(TENSOR_SHAPE(2), TENSOR_BOOL)), "tensor_randn_like");
}
void bad_input_logspace(void) {
    CHECK_BAD(tensor_logspace(0, 1, -1, 10, TENSOR_F32), "tensor_logspace");
    CHECK_BAD(tensor_logspace(0, 1, 5, 10, (tensor_dtype)99), "tensor_logspace");
}
void bad_input_tril_indices(void) {
    CHECK_BAD(tensor_tril_indices(-1, 3, 0, TENSOR_I64), "tensor_tril_indices");
    CHECK_BAD(tensor_tril_indices(3, -1, 0, TENSOR_I64), "tensor_tril_indices");
    CHECK_BAD(tensor_tril_indices(3, 3, 0, TENSOR_BOOL), "tensor_tril_indices");
    CHECK_BAD(tensor_tril_indices(3, 3, 0, (tensor_dtype)99), "tensor_tril_indices");
    CHECK_BAD(tensor_tril_indices(INT64_MAX, 3, 0, TENSOR_I64), "tensor_tril_indices");
}
void bad_input_triu_indices(void) {
    CHECK_BAD(tensor_triu_indices(-1, 3, 0, TENSOR_I64), "tensor_triu_indices");
    CHECK_BAD(tensor_triu_indices(3, 3, 0, TENSOR_BOOL), "tensor_triu_indices");
    CHECK_BAD(tensor_triu_indices(INT64_C(1) << 40, INT64_C(1) << 40, 0, TENSOR_I64), "tensor_triu_indices");
}
