/* QR and the symmetric eigenproblem of generator/parts/linalg_qr_eigh.h (linalg_qr, linalg_eigh,
   linalg_eigvalsh): values against PyTorch 1.13 (the E_ arrays were computed by torch in float64 on
   the inputs la_in makes and pasted here; eigenvectors compared after flipping each column so that
   its entry of largest |value| is positive, on both sides), Q^T Q = I and Q R = A on tall, wide,
   square, batched and non-contiguous inputs in f32 and f64, eigh's A V = V diag(w) and V^T V = I
   with repeated and close eigenvalues, accuracy on the Hilbert matrix (n = 8) against a long
   double Jacobi reference, gradients against torch's for a fixed loss and through the registry
   sweep (f64 gradchecks and gradgradchecks), and the error cases (bad_input_NAME). */
#include "test.h"

/* element i of a tensor of seed s: ((3 i^2 + 5 i + 7 s) mod 17 - 8) / 4 */
static tensor *qe_in_dt(tensor_dtype dt, int nd, const int64_t *shape, int seed) {
    int64_t n = test_numel(nd, shape);
    double *v = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = (double)((i * i * 3 + i * 5 + seed * 7) % 17 - 8) / 4.0;
    tensor *t = test_tensor(dt, nd, shape, v);
    free(v);
    return t;
}
#define IN(seed, ...) qe_in_dt(TENSOR_F64, TENSOR_SHAPE(__VA_ARGS__), seed)
#define N_OF(a) ((int64_t)(sizeof(a) / sizeof((a)[0])))
#define CHECK_E(t, name) CHECK_VALUES(t, E_##name, N_OF(E_##name), 1e-12, 1e-12)

/* ---- the numbers PyTorch gives: A1 = in(1, 4x3), A2 = in(2, 3x5), A3 = in(3, 2x3x2); X = in(4,
   4x4), S = X + X^T; Xb = in(5, 2x3x3), Sb = Xb + Xb^T; the gradients of sum(Q * in(6)) +
   sum(R * in(7)) (qr), sum(w * in(8, 4)) + sum(V * V * in(9, 4x4)) (eigh at S) and sum(w *
   in(8, 4)) (eigvalsh at S) ---- */
static const double E_q_red[] = {-0.13483997249264834, -0.5661587185323439, -0.8107928946236875, 0.9438798074485389, 0.040121483990481044, -0.16309118377218068, 0.13483997249264842, 0.4844297696628454, -0.4189077511467315, -0.26967994498529685, 0.6657194380642784, -0.374876571464155};
static const double E_r_red[] = {1.854049621773916, -0.13483997249264834, -0.5393598899705936, 0.0, -3.0588916590520463, -2.775440804563741, 0.0, 0.0, 0.7943672006405381};
static const double E_q_cpl[] = {-0.13483997249264834, -0.5661587185323439, -0.8107928946236875, 0.0624289137799058, 0.9438798074485389, 0.040121483990481044, -0.16309118377218068, 0.2843983849973474, 0.13483997249264842, 0.4844297696628454, -0.4189077511467315, -0.7560835113344112, -0.26967994498529685, 0.6657194380642784, -0.374876571464155, 0.5861381349335574};
static const double E_r_cpl[] = {1.854049621773916, -0.13483997249264834, -0.5393598899705936, 0.0, -3.0588916590520463, -2.775440804563741, 0.0, 0.0, 0.7943672006405381, 0.0, 0.0, 0.0};
static const double E_q_wide[] = {-0.824163383692134, 0.5625183406811882, 0.06578627044007686, -0.5494422557947561, -0.8223159679034237, 0.148019108490173, 0.13736056394868904, 0.08584617247343435, 0.9867940566011529};
static const double E_r_wide[] = {-1.8200274723201295, -0.5151021148075839, 1.2705852165253733, 0.6181225377691004, -1.8887077542944737, 0.0, -2.087982234436096, -0.9420487874058456, -0.42188875551089117, -0.16265590573913874, 0.0, 0.0, 1.1718179422138693, -0.04933970283005763, 0.5304018054231198};
static const double E_q_batch[] = {-0.6963106238227914, -0.6837634587578277, 0.17407765595569785, -0.4558423058385516, -0.6963106238227914, 0.5698028822981898, -0.21199957600127206, -0.6924303932526733, 0.741998516004452, 0.34519990279458784, 0.6359987280038161, -0.6335433510112434};
static const double E_r_batch[] = {1.4361406616345072, 0.5222329678670936, 0.0, -1.994310088043664, 2.3584952830141512, -0.3974992050023851, 0.0, -2.766675691515446};
static const double E_w[] = {-3.375874356325724, -0.21223115411430088, 1.8659364803132021, 4.222169030126823};
static const double E_v[] = {-0.2677282799547922, 0.3706996650036744, 0.8158112156636773, -0.35405562681020186, -0.41443388631231837, 0.6101863136445471, -0.5702141471471157, -0.3616255562183559, 0.8654261996457033, 0.34552411396250576, -0.02992526163065734, -0.36160068909441695, 0.08719870959660153, 0.6089889224587486, 0.09171894846201373, 0.7830175680406171};
static const double E_w_u[] = {-3.3304799303296937, -0.4224996349935338, 1.494763596804565, 3.508215968518661};
static const double E_v_u[] = {-0.5416280260407061, 0.34050681376965014, -0.38359096654485125, 0.6659971182887174, -0.4778580297026084, 0.27815684352518005, 0.8316199733750987, -0.051852615483208186, 0.686995366913593, 0.5446333624619831, 0.2386320492170958, 0.41769200545265517, -0.0795496743880596, 0.7141837163292811, -0.3229875157885154, -0.6158673016808194};
static const double E_w_l[] = {-1.5873316965766064, -0.39364313232571985, 1.325380540251478, 1.9055942886508488};
static const double E_w_batch[] = {-5.712780100936055, -3.061219917199711, 3.7740000181357702, -5.0138745000010285, -4.226961813565529, 3.7408363135665583};
static const double E_v_batch[] = {-0.5084945766184648, 0.8398347920725338, -0.19002838623240473, 0.746137346640511, 0.5399133962371647, 0.38958001041109375, -0.42978171843142177, -0.05631204656318156, 0.9011751372036405, -0.08985738395294997, 0.9811438883539966, -0.17112077867615186, -0.4318638952420691, 0.11643833980221299, 0.8943912393412916, 0.8974515176517777, 0.1542685430335842, 0.4132577768110553};
static const double E_gqr_tall[] = {-1.5946305227618933, 0.09686569301574789, -0.7383713911542046, 1.8890736257301182, -0.2141693925567364, -1.1546389372539683, 2.0335570699769, 1.3586599701506268, 0.2901709874987512, 1.9366778102161053, 1.7353538863927767, 1.1081589633723794};
static const double E_gqr_wide[] = {-2.483285110113295, -0.7407314430575113, 1.410142805615877, 0.5691578446263832, -0.5656152752194137, 0.5729344944122974, 1.856856043236521, 0.49767349852699283, 0.1061469130440654, -2.1209883452508724, 0.1322196232103269, -0.6570194300392413, 1.3514134662025854, 0.1994797752943023, 0.8625472739209339};
static const double E_geigh[] = {0.3698846205003233, -0.13531567287352078, 0.5496982051435624, -0.2546834156138345, -0.13531567287352073, 0.5899456805228946, 0.632496852651109, 0.3142099858306794, 0.5496982051435624, 0.6324968526511089, -0.18201217139667297, -0.022739229859530037, -0.25468341561383445, 0.31420998583067933, -0.02273922985952993, 1.4721818703734553};
static const double E_geigvalsh[] = {0.6074821815229114, 0.12697897935478275, 0.48170815877038375, -0.009427889063990775, 0.12697897935478278, 0.6626309775471038, 0.704526030817178, 0.11150078167995074, 0.48170815877038375, 0.704526030817178, -0.24859665502915707, -0.14886956057348114, -0.009427889063990816, 0.11150078167995071, -0.1488695605734812, 1.228483495959142};

static double qe_max_abs(tensor *t) { return t ? tensor_item(tensor_max_all(tensor_abs(t))) : INFINITY; }
/* V with each column flipped so that its entry of largest |value| is positive */
static tensor *qe_sign_norm(tensor *V) {
    if (!V) return NULL;
    tensor *idx = tensor_argmax(tensor_abs(V), -2, true);
    return tensor_mul(V, tensor_sign(tensor_gather(V, -2, idx)));
}
static tensor *qe_mT(tensor *t) { return tensor_transpose(t, -1, -2); }

TEST(linalg_qr_eigh_values_against_pytorch) {
    tensor_scope_begin();
    tensor *R = NULL, *Q = tensor_linalg_qr(IN(1, 4, 3), NULL, &R);
    CHECK_SHAPE(Q, 2, (int64_t[]){4, 3});
    CHECK_SHAPE(R, 2, (int64_t[]){3, 3});
    CHECK_E(Q, q_red);
    CHECK_E(R, r_red);
    CHECK_E(tensor_linalg_qr(IN(1, 4, 3), "reduced", NULL), q_red);
    Q = tensor_linalg_qr(IN(1, 4, 3), "complete", &R);
    CHECK_SHAPE(Q, 2, (int64_t[]){4, 4});
    CHECK_SHAPE(R, 2, (int64_t[]){4, 3});
    CHECK_E(Q, q_cpl);
    CHECK_E(R, r_cpl);
    Q = tensor_linalg_qr(IN(1, 4, 3), "r", &R); /* Q: an empty tensor [0], as PyTorch's */
    CHECK_SHAPE(Q, 1, (int64_t[]){0});
    CHECK(Q && tensor_get_dtype(Q) == TENSOR_F64);
    CHECK_E(R, r_red);
    Q = tensor_linalg_qr(IN(2, 3, 5), NULL, &R); /* wide: reduced and complete are the same */
    CHECK_SHAPE(R, 2, (int64_t[]){3, 5});
    CHECK_E(Q, q_wide);
    CHECK_E(R, r_wide);
    Q = tensor_linalg_qr(IN(2, 3, 5), "complete", &R);
    CHECK_E(Q, q_wide);
    CHECK_E(R, r_wide);
    Q = tensor_linalg_qr(IN(3, 2, 3, 2), NULL, &R);
    CHECK_SHAPE(Q, 3, (int64_t[]){2, 3, 2});
    CHECK_E(Q, q_batch);
    CHECK_E(R, r_batch);
    /* non-contiguous: A1 held transposed */
    tensor *A1t = tensor_contiguous(qe_mT(IN(1, 4, 3)));
    Q = tensor_linalg_qr(qe_mT(A1t), NULL, &R);
    CHECK_E(Q, q_red);
    CHECK_E(R, r_red);
    /* f32 */
    Q = tensor_linalg_qr(qe_in_dt(TENSOR_F32, TENSOR_SHAPE(4, 3), 1), "complete", &R);
    CHECK(Q && tensor_get_dtype(Q) == TENSOR_F32 && R && tensor_get_dtype(R) == TENSOR_F32);
    CHECK_VALUES(Q, E_q_cpl, N_OF(E_q_cpl), 1e-5, 1e-5);
    CHECK_VALUES(R, E_r_cpl, N_OF(E_r_cpl), 1e-5, 1e-5);

    tensor *X = IN(4, 4, 4), *S = tensor_add(X, qe_mT(X)), *V = NULL;
    tensor *w = tensor_linalg_eigh(S, NULL, &V);
    CHECK_SHAPE(w, 1, (int64_t[]){4});
    CHECK_SHAPE(V, 2, (int64_t[]){4, 4});
    CHECK_E(w, w);
    CHECK_E(qe_sign_norm(V), v);
    CHECK_E(tensor_linalg_eigh(S, "L", NULL), w);
    CHECK_E(tensor_linalg_eigvalsh(S, NULL), w);
    CHECK_E(tensor_linalg_eigvalsh(S, "U"), w);
    /* only the UPLO triangle is read */
    w = tensor_linalg_eigh(X, "U", &V);
    CHECK_E(w, w_u);
    CHECK_E(qe_sign_norm(V), v_u);
    CHECK_E(tensor_linalg_eigvalsh(X, "U"), w_u);
    CHECK_E(tensor_linalg_eigvalsh(X, "L"), w_l);
    CHECK_E(tensor_linalg_eigvalsh(qe_mT(X), "L"), w_u); /* non-contiguous */
    tensor *Xb = IN(5, 2, 3, 3), *Sb = tensor_add(Xb, qe_mT(Xb));
    w = tensor_linalg_eigh(Sb, NULL, &V);
    CHECK_SHAPE(w, 2, (int64_t[]){2, 3});
    CHECK_SHAPE(V, 3, (int64_t[]){2, 3, 3});
    CHECK_E(w, w_batch);
    CHECK_E(qe_sign_norm(V), v_batch);
    w = tensor_linalg_eigh(tensor_to_dtype(S, TENSOR_F32), NULL, &V);
    CHECK(w && tensor_get_dtype(w) == TENSOR_F32 && V && tensor_get_dtype(V) == TENSOR_F32);
    CHECK_VALUES(w, E_w, 4, 1e-5, 1e-5);
    CHECK_VALUES(qe_sign_norm(V), E_v, 16, 1e-5, 1e-5);
    /* empty matrices, as PyTorch */
    Q = tensor_linalg_qr(tensor_zeros(TENSOR_SHAPE(3, 0), TENSOR_F64), NULL, &R);
    CHECK_SHAPE(Q, 2, (int64_t[]){3, 0});
    CHECK_SHAPE(R, 2, (int64_t[]){0, 0});
    Q = tensor_linalg_qr(tensor_zeros(TENSOR_SHAPE(3, 0), TENSOR_F64), "complete", &R);
    CHECK_VALUES(Q, ((double[]){1, 0, 0, 0, 1, 0, 0, 0, 1}), 9, 0, 0);
    CHECK_SHAPE(R, 2, (int64_t[]){3, 0});
    Q = tensor_linalg_qr(tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F32), "complete", &R);
    CHECK_SHAPE(Q, 2, (int64_t[]){0, 0});
    CHECK_SHAPE(R, 2, (int64_t[]){0, 3});
    w = tensor_linalg_eigh(tensor_zeros(TENSOR_SHAPE(2, 0, 0), TENSOR_F64), NULL, &V);
    CHECK_SHAPE(w, 2, (int64_t[]){2, 0});
    CHECK_SHAPE(V, 3, (int64_t[]){2, 0, 0});
    /* 1 x 1 and a zero column (tau = 0: H = I, R's diagonal keeps its sign) */
    w = tensor_linalg_eigh(tensor_full(TENSOR_SHAPE(1, 1), -2, TENSOR_F64), NULL, &V);
    CHECK_VALUES(w, ((double[]){-2}), 1, 0, 0);
    CHECK_VALUES(V, ((double[]){1}), 1, 0, 0);
    Q = tensor_linalg_qr(test_tensor(TENSOR_F64, 2, (int64_t[]){2, 2}, (double[]){0, 1, 0, 2}), NULL, &R);
    CHECK_VALUES(Q, ((double[]){1, 0, 0, 1}), 4, 0, 0);
    CHECK_VALUES(R, ((double[]){0, 1, 0, 2}), 4, 0, 0);
    tensor_scope_end();
}

/* Q^T Q = I, Q R = A, R upper triangular, for random tall, wide, square, batched and
   non-contiguous inputs in both dtypes and all three modes. */
TEST(linalg_qr_properties) {
    static const int64_t shapes[][3] = {{1, 7, 4}, {1, 4, 7}, {1, 6, 6}, {3, 5, 3}, {2, 3, 5}, {1, 1, 5}, {1, 5, 1}, {1, 33, 20}};
    for (int d = 0; d < 2; d++) {
        tensor_dtype dt = d ? TENSOR_F64 : TENSOR_F32;
        double eps = d ? 2.220446049250313e-16 : 1.1920929e-7;
        for (int s = 0; s < N_OF(shapes); s++) {
            for (int mode = 0; mode < 2; mode++) {
                tensor_scope_begin();
                int64_t b = shapes[s][0], m = shapes[s][1], n = shapes[s][2], k = m < n ? m : n;
                tensor *A = test_random(dt, 3, (int64_t[]){b, n, m}, -1, 1);
                A = qe_mT(A); /* non-contiguous */
                tensor *R = NULL, *Q = tensor_linalg_qr(A, mode ? "complete" : "reduced", &R);
                int64_t kq = mode ? m : k;
                CHECK_SHAPE(Q, 3, (int64_t[]){b, m, kq});
                CHECK_SHAPE(R, 3, (int64_t[]){b, kq, n});
                double tol = 8 * (double)(m > n ? m : n) * eps;
                CHECK_MSG(qe_max_abs(tensor_sub(tensor_matmul(qe_mT(Q), Q), tensor_eye(kq, dt))) < tol, "%lldx%lld mode %d: Q^T Q != I", (long long)m, (long long)n, mode);
                CHECK_MSG(qe_max_abs(tensor_sub(tensor_matmul(Q, R), A)) < tol * qe_max_abs(A) * (double)k, "%lldx%lld mode %d: Q R != A", (long long)m, (long long)n, mode);
                CHECK(qe_max_abs(tensor_tril(R, -1)) == 0);
                tensor *R2 = NULL;
                tensor *Qr = tensor_linalg_qr(A, "r", &R2);
                CHECK_SHAPE(Qr, 1, (int64_t[]){0});
                CHECK(qe_max_abs(tensor_sub(R2, tensor_narrow(R, -2, 0, k))) == 0);
                tensor_scope_end();
            }
        }
    }
}

/* eigh: A V = V diag(w), V^T V = I, w ascending, w against the known spectrum, for spectra with
   repeated and close eigenvalues (A = Q diag(l) Q^T), the identity, the zero matrix, a diagonal
   matrix and random symmetric matrices, batched, in both dtypes. */
TEST(linalg_eigh_properties) {
    static const double spectra[][6] = {{1, 1, 2, 2 + 1e-10, 5, 5}, {3, 3, 3, 3, 3, 3}, {0, 0, 0, 0, 0, 0}, {-1, 1e-12, 1e-12, 2, 2, 7}};
    for (int d = 0; d < 2; d++) {
        tensor_dtype dt = d ? TENSOR_F64 : TENSOR_F32;
        double eps = d ? 2.220446049250313e-16 : 1.1920929e-7;
        for (int s = 0; s < N_OF(spectra) + 2; s++) {
            tensor_scope_begin();
            int64_t n = 6;
            tensor *A, *known = NULL;
            if (s < N_OF(spectra)) {
                tensor *Q = tensor_linalg_qr(test_random(TENSOR_F64, 2, (int64_t[]){n, n}, -1, 1), NULL, NULL);
                known = test_tensor(TENSOR_F64, 1, (int64_t[]){n}, spectra[s]);
                A = tensor_to_dtype(tensor_matmul(tensor_mul(Q, known), qe_mT(Q)), dt);
                A = tensor_mul_scalar(tensor_add(A, qe_mT(A)), 0.5); /* exactly symmetric */
            } else if (s == N_OF(spectra)) { /* diagonal, unsorted */
                A = tensor_diag_embed(test_tensor(dt, 1, (int64_t[]){n}, (double[]){4, -1, 2, 0, 9, -3}), 0, -2, -1);
                known = test_tensor(TENSOR_F64, 1, (int64_t[]){n}, (double[]){-3, -1, 0, 2, 4, 9});
            } else { /* random, batched */
                A = test_random(dt, 3, (int64_t[]){3, n, n}, -1, 1);
                A = tensor_add(A, qe_mT(A));
            }
            tensor *V = NULL, *w = tensor_linalg_eigh(A, s % 2 ? "U" : "L", &V);
            double an = qe_max_abs(A) > 0 ? qe_max_abs(A) : 1, tol = 16 * (double)n * eps;
            CHECK_MSG(qe_max_abs(tensor_sub(tensor_matmul(A, V), tensor_mul(V, tensor_unsqueeze(w, -2)))) < tol * an, "spectrum %d %s: A V != V diag(w)", s, tensor_dtype_name(dt));
            CHECK_MSG(qe_max_abs(tensor_sub(tensor_matmul(qe_mT(V), V), tensor_eye(n, dt))) < tol, "spectrum %d %s: V^T V != I", s, tensor_dtype_name(dt));
            double *wv = test_values(w);
            int64_t total = tensor_numel(w);
            for (int64_t i = 1; i < total; i++) if (i % n) CHECK_MSG(wv[i - 1] <= wv[i], "spectrum %d: eigenvalues not ascending", s);
            if (known) {
                double *kv = test_values(known);
                for (int64_t i = 0; i < n; i++) CHECK_MSG(fabs(wv[i] - kv[i]) < tol * an, "spectrum %d %s: w[%lld] = %.17g, expected %.17g", s, tensor_dtype_name(dt), (long long)i, wv[i], kv[i]);
                free(kv);
            }
            free(wv);
            CHECK(qe_max_abs(tensor_sub(tensor_linalg_eigvalsh(A, s % 2 ? "U" : "L"), w)) == 0);
            tensor_scope_end();
        }
    }
}

/* The Hilbert matrix of order 8 in f64 (condition 1.5e10): QR's residuals at the level of
   rounding (||Q R - A|| and ||Q^T Q - I|| within a small multiple of n eps ||A||), eigh's
   eigenvalues within n eps ||A|| of a cyclic Jacobi in long double on the same (f64-rounded)
   matrix, and A V = V diag(w). */
static void qe_jacobi_ld(int n, const double *h, long double *w) {
    long double a[8][8];
    for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) a[i][j] = h[i * n + j];
    for (int sweep = 0; sweep < 100; sweep++) {
        long double off = 0;
        for (int i = 0; i < n; i++) for (int j = i + 1; j < n; j++) off += a[i][j] * a[i][j];
        if (off < 1e-60L) break;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++) {
                if (a[p][q] == 0) continue;
                long double theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
                long double t = (theta >= 0 ? 1 : -1) / (fabsl(theta) + sqrtl(theta * theta + 1));
                long double c = 1 / sqrtl(t * t + 1), s = t * c;
                for (int k = 0; k < n; k++) { /* columns p, q */
                    long double akp = a[k][p], akq = a[k][q];
                    a[k][p] = c * akp - s * akq;
                    a[k][q] = s * akp + c * akq;
                }
                for (int k = 0; k < n; k++) { /* rows p, q */
                    long double apk = a[p][k], aqk = a[q][k];
                    a[p][k] = c * apk - s * aqk;
                    a[q][k] = s * apk + c * aqk;
                }
            }
    }
    for (int i = 0; i < n; i++) w[i] = a[i][i];
    for (int i = 0; i < n; i++) /* ascending */
        for (int j = i + 1; j < n; j++) if (w[j] < w[i]) { long double t = w[i]; w[i] = w[j]; w[j] = t; }
}
TEST(linalg_qr_eigh_hilbert_accuracy) {
    tensor_scope_begin();
    const int n = 8;
    const double eps = 2.220446049250313e-16;
    double h[64];
    for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) h[i * n + j] = 1.0 / (i + j + 1);
    tensor *A = test_tensor(TENSOR_F64, 2, (int64_t[]){n, n}, h);
    double an = qe_max_abs(A);
    tensor *R = NULL, *Q = tensor_linalg_qr(A, NULL, &R);
    double res = qe_max_abs(tensor_sub(tensor_matmul(Q, R), A)), orth = qe_max_abs(tensor_sub(tensor_matmul(qe_mT(Q), Q), tensor_eye(n, TENSOR_F64)));
    CHECK_MSG(res < 4 * n * eps * an, "Hilbert QR: ||QR - A|| = %.3g", res);
    CHECK_MSG(orth < 4 * n * eps, "Hilbert QR: ||Q^T Q - I|| = %.3g", orth);
    /* R's diagonal: |r_ii| decays like the singular values; LAPACK's signs (the first negative) */
    double *rv = test_values(R);
    CHECK(rv[0] < 0 && fabs(rv[63]) > 0 && fabs(rv[63]) < 1e-8);
    free(rv);
    long double wl[8];
    qe_jacobi_ld(n, h, wl);
    tensor *V = NULL, *w = tensor_linalg_eigh(A, NULL, &V);
    double *wv = test_values(w), worst = 0;
    for (int i = 0; i < n; i++) if (fabsl((long double)wv[i] - wl[i]) > worst) worst = (double)fabsl((long double)wv[i] - wl[i]);
    CHECK_MSG(worst < 2 * n * eps * an, "Hilbert eigh: eigenvalue error %.3g (bound %.3g)", worst, 2 * n * eps * an);
    CHECK_MSG(wv[0] > 0 && fabsl((long double)wv[0] - wl[0]) < 1e-6L * wl[0], "Hilbert eigh: smallest eigenvalue %.17g, long double %.17Lg", wv[0], wl[0]);
    free(wv);
    double r2 = qe_max_abs(tensor_sub(tensor_matmul(A, V), tensor_mul(V, tensor_unsqueeze(w, -2))));
    CHECK_MSG(r2 < 4 * n * eps * an, "Hilbert eigh: ||A V - V diag(w)|| = %.3g", r2);
    tensor_scope_end();
}

/* The gradients against torch's for a fixed loss (beyond the finite differences of the sweep) and
   PyTorch's refusals: mode 'r' (Q not computed) and 'complete' with m > n. NaN input: eigh's
   convergence error. */
TEST(linalg_qr_eigh_gradients_against_pytorch) {
    tensor_scope_begin();
    tensor *A = tensor_set_requires_grad(IN(1, 4, 3), true), *R = NULL;
    tensor *Q = tensor_linalg_qr(A, NULL, &R);
    CHECK(tensor_backward(tensor_add(tensor_sum_all(tensor_mul(Q, IN(6, 4, 3))), tensor_sum_all(tensor_mul(R, IN(7, 3, 3))))) == 0);
    CHECK_E(tensor_grad(A), gqr_tall);
    A = tensor_set_requires_grad(IN(2, 3, 5), true);
    Q = tensor_linalg_qr(A, "complete", &R);
    CHECK(tensor_backward(tensor_add(tensor_sum_all(tensor_mul(Q, IN(6, 3, 3))), tensor_sum_all(tensor_mul(R, IN(7, 3, 5))))) == 0);
    CHECK_E(tensor_grad(A), gqr_wide);
    tensor *X = IN(4, 4, 4);
    A = tensor_set_requires_grad(tensor_add(X, qe_mT(X)), true);
    tensor *V = NULL, *w = tensor_linalg_eigh(A, NULL, &V);
    CHECK(tensor_backward(tensor_add(tensor_sum_all(tensor_mul(w, IN(8, 4))), tensor_sum_all(tensor_mul(tensor_mul(V, V), IN(9, 4, 4))))) == 0);
    CHECK_E(tensor_grad(A), geigh);
    A = tensor_set_requires_grad(tensor_add(X, qe_mT(X)), true);
    CHECK(tensor_backward(tensor_sum_all(tensor_mul(tensor_linalg_eigvalsh(A, NULL), IN(8, 4)))) == 0);
    CHECK_E(tensor_grad(A), geigvalsh);
    A = tensor_set_requires_grad(tensor_add(X, qe_mT(X)), true); /* eigh's eigenvalues alone: eigvalsh's gradient */
    CHECK(tensor_backward(tensor_sum_all(tensor_mul(tensor_linalg_eigh(A, "U", NULL), IN(8, 4)))) == 0);
    CHECK_E(tensor_grad(A), geigvalsh);
    /* repeated eigenvalues (the identity): a loss of w alone has a gradient, V diag(g) V^T, with or
       without V asked for; one of V is inf/NaN, as PyTorch's */
    A = tensor_set_requires_grad(tensor_eye(3, TENSOR_F64), true);
    w = tensor_linalg_eigh(A, NULL, &V);
    CHECK(tensor_backward(tensor_sum_all(tensor_mul(w, IN(8, 3)))) == 0);
    CHECK_VALUES(tensor_grad(A), ((double[]){-0.75, 0, 0, 0, 1.25, 0, 0, 0, 0.5}), 9, 1e-15, 0);
    A = tensor_set_requires_grad(tensor_eye(3, TENSOR_F64), true);
    w = tensor_linalg_eigh(A, NULL, &V);
    CHECK(tensor_backward(tensor_sum_all(tensor_mul(V, IN(9, 3, 3)))) == 0);
    CHECK(tensor_grad(A) && tensor_item(tensor_sum_all(tensor_isfinite(tensor_grad(A)))) < 9);
    /* PyTorch's refusals, at backward */
    A = tensor_set_requires_grad(IN(1, 4, 3), true);
    tensor_linalg_qr(A, "r", &R);
    CHECK_BAD_INT(tensor_backward(tensor_sum_all(R)) != 0, "not computed when mode='r'");
    tensor_linalg_qr(A, "complete", &R);
    CHECK_BAD_INT(tensor_backward(tensor_sum_all(R)) != 0, "not differentiable when mode='complete' and nrows > ncols");
    tensor_scope_end();
}

/* ---- gradients (f64, the registry sweep of tests/test_autograd.c calls these) ---- */
typedef struct { int op; const char *mode; bool T; } qec;
enum { Q_QR, Q_EIGH, Q_EIGH_W, Q_EIGVALSH };
static tensor *qe_flat(tensor *t) { return tensor_reshape(t, 1, (int64_t[]){-1}); }
static tensor *f_qe(tensor *const *in, const void *vctx) {
    const qec *c = (const qec *)vctx;
    tensor *x = c->T ? qe_mT(in[0]) : in[0];
    if (c->op == Q_QR) { /* Q and R together: both gradients */
        tensor *R = NULL, *Q = tensor_linalg_qr(x, c->mode, &R);
        tensor *parts[2] = {qe_flat(Q), qe_flat(R)};
        return Q && R ? tensor_cat(2, parts, 0) : NULL;
    }
    tensor *S = tensor_add(x, c->T ? in[0] : tensor_transpose(in[0], -1, -2)); /* symmetric: the gradient is defined in every entry */
    if (c->op == Q_EIGVALSH) return tensor_linalg_eigvalsh(S, c->mode);
    tensor *V = NULL, *w = tensor_linalg_eigh(S, c->mode, c->op == Q_EIGH ? &V : NULL);
    if (c->op == Q_EIGH_W) return w;
    /* V * V: independent of the eigenvectors' signs */
    tensor *parts[2] = {qe_flat(w), qe_flat(tensor_mul(V, V))};
    return w && V ? tensor_cat(2, parts, 0) : NULL;
}
static void qe_grad(int line, qec c, int nd, const int64_t *s, bool twice) {
    tensor_scope_begin();
    tensor *in[1] = {test_leaf(nd, s, -1, 1)};
    int want = (int)tensor_numel(in[0]);
    int got = test_gradcheck(__FILE__, line, f_qe, &c, 1, in, 1e-6, 1e-5);
    if (got != want) test_fail(__FILE__, line, "gradcheck compared %d elements, expected %d", got, want);
    if (twice) test_gradgradcheck(__FILE__, line, f_qe, &c, 1, in, 1e-5, 1e-4);
    tensor_scope_end();
}
#define QG(c, s, twice) qe_grad(__LINE__, c, N_OF(s), s, twice)
static const int64_t G4x3[] = {4, 3}, G3x3[] = {3, 3}, G2x4[] = {2, 4}, G4x2[] = {4, 2}, G2x3x2[] = {2, 3, 2}, G2x3x3[] = {2, 3, 3}, G4x4[] = {4, 4};

void gradcheck_linalg_qr(void) {
    QG(((qec){.op = Q_QR}), G4x3, true);
    QG(((qec){.op = Q_QR, .mode = "complete"}), G3x3, false);
    QG(((qec){.op = Q_QR, .mode = "reduced"}), G2x4, true);         /* wide */
    QG(((qec){.op = Q_QR, .mode = "complete", .T = true}), G4x2, false); /* wide [2, 4], held transposed */
    QG(((qec){.op = Q_QR, .T = true}), G2x3x2, false);             /* batched, non-contiguous, wide */
}
void gradcheck_linalg_eigh(void) {
    QG(((qec){.op = Q_EIGH}), G4x4, true);
    QG(((qec){.op = Q_EIGH, .mode = "U", .T = true}), G2x3x3, false);
    QG(((qec){.op = Q_EIGH_W}), G3x3, false);
}
void gradcheck_linalg_eigvalsh(void) {
    QG(((qec){.op = Q_EIGVALSH}), G3x3, true);
    QG(((qec){.op = Q_EIGVALSH, .mode = "U", .T = true}), G2x3x3, false);
}

/* ---- PyTorch's error cases ---- */
static tensor *F(tensor_dtype d, int nd, const int64_t *shape) { return tensor_ones(nd, shape, d); }
#define O(...) F(TENSOR_F32, TENSOR_SHAPE(__VA_ARGS__))

void bad_input_linalg_qr(void) {
    tensor_scope_begin();
    tensor *R = (tensor *)1;
    CHECK_BAD(tensor_linalg_qr(NULL, NULL, &R), "tensor_linalg_qr");
    CHECK(R == NULL);
    R = (tensor *)1;
    CHECK_BAD(tensor_linalg_qr(O(3), NULL, &R), "at least 2 dimensions");
    CHECK(R == NULL);
    CHECK_BAD(tensor_linalg_qr(F(TENSOR_I64, TENSOR_SHAPE(3, 3)), NULL, NULL), "float32 or float64");
    CHECK_BAD(tensor_linalg_qr(F(TENSOR_F16, TENSOR_SHAPE(3, 3)), NULL, NULL), "float32 or float64");
    CHECK_BAD(tensor_linalg_qr(O(3, 2), "foo", &R), "unrecognized mode 'foo'");
    CHECK(R == NULL);
    CHECK_BAD(tensor_linalg_qr(O(3, 2), "", NULL), "unrecognized mode");
    CHECK_BAD(tensor_linalg_qr(O(3, 2), "Reduced", NULL), "unrecognized mode");
    tensor_scope_end();
}
void bad_input_linalg_eigh(void) {
    tensor_scope_begin();
    tensor *V = (tensor *)1;
    CHECK_BAD(tensor_linalg_eigh(NULL, NULL, &V), "tensor_linalg_eigh");
    CHECK(V == NULL);
    V = (tensor *)1;
    CHECK_BAD(tensor_linalg_eigh(O(4, 3), NULL, &V), "but they are 4 by 3 matrices");
    CHECK(V == NULL);
    CHECK_BAD(tensor_linalg_eigh(O(3), NULL, NULL), "at least 2 dimensions");
    CHECK_BAD(tensor_linalg_eigh(F(TENSOR_I32, TENSOR_SHAPE(2, 2)), NULL, NULL), "float32 or float64");
    CHECK_BAD(tensor_linalg_eigh(F(TENSOR_BF16, TENSOR_SHAPE(2, 2)), NULL, NULL), "float32 or float64");
    CHECK_BAD(tensor_linalg_eigh(O(2, 2), "X", NULL), "UPLO argument to be 'L' or 'U', but got X");
    CHECK_BAD(tensor_linalg_eigh(O(2, 2), "LU", NULL), "UPLO");
    /* NaN: no convergence, PyTorch's error (naming the batch element) */
    CHECK_BAD(tensor_linalg_eigh(tensor_full(TENSOR_SHAPE(3, 3), NAN, TENSOR_F64), NULL, &V), "failed to converge");
    tensor *b = tensor_stack(2, (tensor *[]){tensor_eye(3, TENSOR_F32), tensor_full(TENSOR_SHAPE(3, 3), NAN, TENSOR_F32)}, 0);
    CHECK_BAD(tensor_linalg_eigh(b, "U", NULL), "(Batch element 1): the algorithm failed to converge");
    tensor_scope_end();
}
void bad_input_linalg_eigvalsh(void) {
    tensor_scope_begin();
    CHECK_BAD(tensor_linalg_eigvalsh(NULL, NULL), "tensor_linalg_eigvalsh");
    CHECK_BAD(tensor_linalg_eigvalsh(O(2, 3), NULL), "square matrices");
    CHECK_BAD(tensor_linalg_eigvalsh(F(TENSOR_U8, TENSOR_SHAPE(2, 2)), NULL), "float32 or float64");
    CHECK_BAD(tensor_linalg_eigvalsh(O(2, 2), "upper"), "UPLO");
    CHECK_BAD(tensor_linalg_eigvalsh(tensor_full(TENSOR_SHAPE(2, 2), NAN, TENSOR_F64), "L"), "failed to converge");
    tensor_scope_end();
}
