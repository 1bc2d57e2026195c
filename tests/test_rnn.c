/* The recurrent cells and bilinear (generator/parts/rnn.h) against PyTorch 1.13 (values computed
   with torch.rnn_tanh_cell, lstm_cell, gru_cell and F.bilinear in f64 on the inputs mk() rebuilds,
   pasted here), their gradients through the registry sweep, and their bad inputs. */
#include "test.h"
#include <math.h>

static const double R_tanh[15] = {0.955575372791284, 0.6616324911204028, -0.18749059546437805, -0.5991272306215792, -0.9363452606509759, -0.4732518405957663, -0.5825773585978555, 0.009979804631524574, -0.3911558354238816, 0.95408384332216, -0.0666227292815372, 0.9309204119202517, 0.4016814372937154, 0.5689049952558378, -0.9917713242294638};
static const double R_relu_nobias[15] = {1.639881582018659, 0.28580047949280574, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.3002911198767633, 0.0, 1.155335258471687, 0.2597656574228664, 0.9913333619842934, 0.0};
static const double R_lstm_h[15] = {-0.1853398363324013, -0.11643244215109204, 0.19021739760231662, 0.3484848473567743, 0.354838087505506, 0.3900061838826814, 0.4871048252825808, 0.038406132226716606, -0.01405650806112908, -0.08037548828702319, -0.1140231705930618, -0.11993173244126974, -0.02923299281450822, -0.016764742948943763, -0.001189720455430938};
static const double R_lstm_c[15] = {-0.5294711898681314, -0.41575436224800055, 0.5396527642479145, 0.7535208453900197, 0.6274307144452687, 1.2971772580505974, 0.7154998313209001, 0.04648544275658764, -0.023604267652496513, -0.26268139550366054, -0.23235553707950973, -0.6449724859038488, -0.1628438290094228, -0.045509416995104135, -0.0017314620493846244};
static const double R_lstm_h0[15] = {-0.13397832412324262, -0.14373216300334285, 0.1042185744395067, 0.17217482434861459, 0.08290200034685956, 0.19344603288529352, 0.1561626989103112, -0.0016963634229246118, -0.08199239470193387, -0.11662500013627525, -0.13315425656374236, -0.15874410206093695, -0.02718752323015024, 0.2047411551443189, 0.20729455274849024};
static const double R_lstm_c0[15] = {-0.3985955994874506, -0.48755652742403754, 0.2349910947575234, 0.2869609204163957, 0.12435995541698593, 0.4091002368217206, 0.21970591200445996, -0.0024446484229719368, -0.1946788551306967, -0.4747036715932333, -0.28985068535383335, -0.6358923489331609, -0.09062000870222851, 0.4266917609234429, 0.29618091279802705};
static const double R_gru[15] = {0.3061143487307645, 0.26958887252789976, 0.5528387953406726, 0.33165323389692053, 0.38056349479150936, 0.30827034569897727, 0.3715148480714323, 0.01614332288652437, 0.18634749600436845, -0.007747274352119193, -0.5402360332358592, -0.6934630860531837, -0.6099172980224343, -0.30940913177257123, -0.11227580931938491};
static const double R_gru_nob[15] = {0.23944681460107778, 0.24546998915105256, 0.517596461031204, 0.37832231354566204, 0.3438086327135471, 0.20281829036644725, 0.31114454247457757, 0.1969211059036431, 0.1323529951106296, -0.16793073351607546, -0.6675184398372243, -0.7506735928377459, -0.5939492001030686, -0.2935250277134141, -0.10497071788257106};
static const double R_bilinear[12] = {0.2319883470143495, 2.8568360009909908, 2.3406285160777793, 2.0009709503969066, -1.2059557840317348, 0.12717080692993932, -1.53085341314504, 2.1061314977060803, 0.7669192251054011, 0.6833963034361377, -2.236696886519776, -1.076295188928808};
static const double R_bilinear_nob[6] = {-0.2474371915898535, 2.0153650161830945, 1.861202977473576, 1.1594999655890101, -1.6853813226359378, -0.7143001778779572};

static tensor *mk(int nd, const int64_t *shape, double a, double b, double scale) {
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= shape[d];
    double *v = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = sin(a * (double)i + b) * scale;
    tensor *t = tensor_from_data(v, nd, shape, TENSOR_F64);
    free(v);
    return t;
}
enum { N = 3, I = 4, H = 5 };
typedef struct { tensor *wi, *wh, *bi, *bh; } cell_w;
static cell_w weights(int g, double a) {
    cell_w w = {mk(2, (const int64_t[]){g * H, I}, a, 0.5, 0.6), mk(2, (const int64_t[]){g * H, H}, a + 0.11, -0.4, 0.6),
                mk(1, (const int64_t[]){g * H}, a + 0.2, 0.0, 0.3), mk(1, (const int64_t[]){g * H}, a + 0.3, 1.0, 0.3)};
    return w;
}
#define NH (N * H)

TEST(rnn_cells_match_pytorch) {
    tensor *x = mk(2, (const int64_t[]){N, I}, 0.7, 0.1, 1), *h = mk(2, (const int64_t[]){N, H}, 0.45, 0.3, 1), *c = mk(2, (const int64_t[]){N, H}, 0.33, -0.2, 1);
    cell_w r = weights(1, 0.9);
    CHECK_VALUES(tensor_rnn_tanh_cell(x, h, r.wi, r.wh, r.bi, r.bh), R_tanh, NH, 1e-14, 1e-13);
    CHECK_VALUES(tensor_rnn_relu_cell(x, h, r.wi, r.wh, NULL, NULL), R_relu_nobias, NH, 1e-14, 1e-13);
    /* unbatched: row 1 of the batched result */
    CHECK_VALUES(tensor_rnn_tanh_cell(tensor_select(x, 0, 1), tensor_select(h, 0, 1), r.wi, r.wh, r.bi, r.bh), R_tanh + H, H, 1e-14, 1e-13);
    cell_w l = weights(4, 1.3);
    tensor *cy = NULL;
    CHECK_VALUES(tensor_lstm_cell(x, h, c, l.wi, l.wh, l.bi, l.bh, &cy), R_lstm_h, NH, 1e-14, 1e-13);
    CHECK_VALUES(cy, R_lstm_c, NH, 1e-14, 1e-13);
    CHECK_VALUES(tensor_lstm_cell(x, NULL, NULL, l.wi, l.wh, l.bi, l.bh, &cy), R_lstm_h0, NH, 1e-14, 1e-13); /* NULL states: zeros */
    CHECK_VALUES(cy, R_lstm_c0, NH, 1e-14, 1e-13);
    CHECK(tensor_lstm_cell(x, h, c, l.wi, l.wh, l.bi, l.bh, NULL) != NULL); /* cy may be skipped */
    cell_w g = weights(3, 1.7);
    CHECK_VALUES(tensor_gru_cell(x, h, g.wi, g.wh, g.bi, g.bh), R_gru, NH, 1e-14, 1e-13);
    CHECK_VALUES(tensor_gru_cell(x, h, g.wi, g.wh, NULL, NULL), R_gru_nob, NH, 1e-14, 1e-13);
    /* f32 in, f32 out */
    tensor *h32 = tensor_gru_cell(tensor_to_dtype(x, TENSOR_F32), tensor_to_dtype(h, TENSOR_F32), tensor_to_dtype(g.wi, TENSOR_F32), tensor_to_dtype(g.wh, TENSOR_F32), NULL, NULL);
    CHECK(h32 && tensor_get_dtype(h32) == TENSOR_F32);
    CHECK_VALUES(h32, R_gru_nob, NH, 1e-6, 1e-5);
}

TEST(bilinear_matches_pytorch) {
    tensor *w = mk(3, (const int64_t[]){2, 4, 3}, 0.37, 0.2, 1), *b = mk(1, (const int64_t[]){2}, 0.5, 0.5, 1);
    tensor *x1 = mk(3, (const int64_t[]){2, 3, 4}, 0.21, 0.0, 1), *x2 = mk(3, (const int64_t[]){2, 3, 3}, 0.43, 0.7, 1);
    tensor *y = tensor_bilinear(x1, x2, w, b);
    CHECK_SHAPE(y, TENSOR_SHAPE(2, 3, 2));
    CHECK_VALUES(y, R_bilinear, 12, 1e-14, 1e-13);
    CHECK_VALUES(tensor_bilinear(tensor_select(x1, 0, 0), tensor_select(x2, 0, 0), w, NULL), R_bilinear_nob, 6, 1e-14, 1e-13);
}

/* ---- gradient checks (the registry sweep) ---- */
typedef enum { C_TANH, C_RELU, C_LSTM_H, C_LSTM_C, C_GRU, C_BIL } cell_kind;
static tensor *cell_of(tensor *const *in, const void *ctx) {
    switch (*(const cell_kind *)ctx) {
    case C_TANH: return tensor_rnn_tanh_cell(in[0], in[1], in[2], in[3], in[4], in[5]);
    case C_RELU: return tensor_rnn_relu_cell(in[0], in[1], in[2], in[3], in[4], in[5]);
    case C_LSTM_H: return tensor_lstm_cell(in[0], in[1], in[6], in[2], in[3], in[4], in[5], NULL);
    case C_LSTM_C: {
        tensor *cy = NULL, *hy = tensor_lstm_cell(in[0], in[1], in[6], in[2], in[3], in[4], in[5], &cy);
        tensor_free(hy);
        return cy;
    }
    case C_GRU: return tensor_gru_cell(in[0], in[1], in[2], in[3], in[4], in[5]);
    default: return tensor_bilinear(in[0], in[1], in[2], in[3]);
    }
}
static void gradcheck_cell(cell_kind k, int gates) {
    tensor *in[7] = {test_leaf(TENSOR_SHAPE(2, 3), -1, 1), test_leaf(TENSOR_SHAPE(2, 4), -1, 1), test_leaf(TENSOR_SHAPE(gates * 4, 3), -0.7, 0.7),
                     test_leaf(TENSOR_SHAPE(gates * 4, 4), -0.7, 0.7), test_leaf(TENSOR_SHAPE(gates * 4), -0.3, 0.3), test_leaf(TENSOR_SHAPE(gates * 4), -0.3, 0.3),
                     test_leaf(TENSOR_SHAPE(2, 4), -1, 1)};
    int n = k == C_LSTM_H || k == C_LSTM_C ? 7 : 6;
    GRADCHECK(cell_of, &k, n, in);
    GRADGRADCHECK(cell_of, &k, n, in);
}
void gradcheck_rnn_tanh_cell(void) { gradcheck_cell(C_TANH, 1); }
void gradcheck_rnn_relu_cell(void) { gradcheck_cell(C_RELU, 1); }
void gradcheck_lstm_cell(void) { gradcheck_cell(C_LSTM_H, 4); gradcheck_cell(C_LSTM_C, 4); }
void gradcheck_gru_cell(void) { gradcheck_cell(C_GRU, 3); }
void gradcheck_bilinear(void) {
    cell_kind k = C_BIL;
    tensor *in[4] = {test_leaf(TENSOR_SHAPE(3, 4), -1, 1), test_leaf(TENSOR_SHAPE(3, 2), -1, 1), test_leaf(TENSOR_SHAPE(5, 4, 2), -1, 1), test_leaf(TENSOR_SHAPE(5), -1, 1)};
    GRADCHECK(cell_of, &k, 4, in);
    GRADGRADCHECK(cell_of, &k, 4, in);
}

/* ---- bad inputs ---- */
static tensor *z(int nd, const int64_t *shape) { return tensor_zeros(nd, shape, TENSOR_F32); }
void bad_input_rnn_tanh_cell(void) {
    const char *fn = "tensor_rnn_tanh_cell";
    tensor *x = z(TENSOR_SHAPE(2, 3)), *h = z(TENSOR_SHAPE(2, 4)), *wi = z(TENSOR_SHAPE(4, 3)), *wh = z(TENSOR_SHAPE(4, 4));
    CHECK_BAD(tensor_rnn_tanh_cell(NULL, h, wi, wh, NULL, NULL), fn);
    CHECK_BAD(tensor_rnn_tanh_cell(x, h, NULL, wh, NULL, NULL), fn);
    CHECK_BAD(tensor_rnn_tanh_cell(x, h, z(TENSOR_SHAPE(4, 2)), wh, NULL, NULL), fn);                /* input size */
    CHECK_BAD(tensor_rnn_tanh_cell(x, h, wi, z(TENSOR_SHAPE(4, 3)), NULL, NULL), fn);                /* w_hh shape */
    CHECK_BAD(tensor_rnn_tanh_cell(x, z(TENSOR_SHAPE(3, 4)), wi, wh, NULL, NULL), fn);               /* batch */
    CHECK_BAD(tensor_rnn_tanh_cell(x, h, wi, wh, z(TENSOR_SHAPE(5)), NULL), fn);                     /* bias */
    CHECK_BAD(tensor_rnn_tanh_cell(tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_I64), h, wi, wh, NULL, NULL), fn);
    CHECK_BAD(tensor_rnn_tanh_cell(z(TENSOR_SHAPE(1, 2, 3)), h, wi, wh, NULL, NULL), fn);
}
void bad_input_rnn_relu_cell(void) { CHECK_BAD(tensor_rnn_relu_cell(NULL, NULL, NULL, NULL, NULL, NULL), "tensor_rnn_relu_cell"); }
void bad_input_lstm_cell(void) {
    const char *fn = "tensor_lstm_cell";
    tensor *x = z(TENSOR_SHAPE(2, 3)), *h = z(TENSOR_SHAPE(2, 4)), *wi = z(TENSOR_SHAPE(16, 3)), *wh = z(TENSOR_SHAPE(16, 4)), *cy = x;
    CHECK_BAD(tensor_lstm_cell(x, h, z(TENSOR_SHAPE(2, 5)), wi, wh, NULL, NULL, &cy), fn); /* cell state */
    CHECK(cy == NULL);
    CHECK_BAD(tensor_lstm_cell(x, h, NULL, z(TENSOR_SHAPE(15, 3)), wh, NULL, NULL, NULL), fn); /* not 4 H rows */
    CHECK_BAD(tensor_lstm_cell(x, h, NULL, wi, z(TENSOR_SHAPE(12, 4)), NULL, NULL, NULL), fn);
}
void bad_input_gru_cell(void) {
    const char *fn = "tensor_gru_cell";
    CHECK_BAD(tensor_gru_cell(z(TENSOR_SHAPE(2, 3)), NULL, z(TENSOR_SHAPE(12, 3)), z(TENSOR_SHAPE(16, 4)), NULL, NULL), fn);
    CHECK_BAD(tensor_gru_cell(NULL, NULL, NULL, NULL, NULL, NULL), fn);
}
void bad_input_bilinear(void) {
    const char *fn = "tensor_bilinear";
    tensor *w = z(TENSOR_SHAPE(5, 4, 2));
    CHECK_BAD(tensor_bilinear(NULL, z(TENSOR_SHAPE(3, 2)), w, NULL), fn);
    CHECK_BAD(tensor_bilinear(z(TENSOR_SHAPE(3, 4)), z(TENSOR_SHAPE(3, 3)), w, NULL), fn);      /* in2 */
    CHECK_BAD(tensor_bilinear(z(TENSOR_SHAPE(3, 4)), z(TENSOR_SHAPE(2, 2)), w, NULL), fn);      /* batch */
    CHECK_BAD(tensor_bilinear(z(TENSOR_SHAPE(3, 4)), z(TENSOR_SHAPE(3, 2)), z(TENSOR_SHAPE(5, 8)), NULL), fn);
    CHECK_BAD(tensor_bilinear(z(TENSOR_SHAPE(3, 4)), z(TENSOR_SHAPE(3, 2)), w, z(TENSOR_SHAPE(4))), fn);
}
