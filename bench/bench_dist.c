/* bench_dist.c: tensor_dist_all_reduce against MPI_Allreduce called directly on the same buffer, in
   the same run, f32 sums of 4 KiB to 256 MiB (make bench-dist runs it as mpirun -np 2; MPIRUN_NP
   and MPIRUN_ARGS change that). Each size: a warm-up call, then rounds of the same number of calls
   of each way, alternating, for about BENCH_SECONDS (0.3 s); the median round time of each gives
   its bus bandwidth (the bytes every rank moves in a ring allreduce: 2 (n - 1) / n times the
   buffer, as nccl-tests counts) and the ratio. Rank 0 prints one line a size. Built with mpicc and
   TENSOR_USE_MPI. */
#define TENSOR_IMPLEMENTATION
#include "../tensor.h"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (tensor_dist_init(&argc, &argv) != 0) { fprintf(stderr, "tensor_dist_init: %s\n", tensor_last_error()); return 1; }
    int rank = tensor_dist_rank(), world = tensor_dist_world_size();
    const char *env = getenv("BENCH_SECONDS");
    double budget = env ? atof(env) : 0.3;
    if (rank == 0) {
        printf("-- all_reduce (f32 sum, %d ranks): tensor_dist_all_reduce vs MPI_Allreduce on the same buffer; bus bandwidth = 2 (n-1)/n bytes / time\n", world);
        printf("%10s %9s %12s %9s %12s %s\n", "bytes", "tensor.h", "", "MPI", "", "ratio");
    }
    tensor_set_num_threads(1);
    for (int64_t bytes = 4096; bytes <= ((int64_t)256 << 20); bytes *= 4) {
        int64_t n = bytes / 4;
        tensor *t = tensor_ones(1, &n, TENSOR_F32);
        float *p = (float *)tensor_data_ptr(t);
        if (!p) return 1;
        /* calls a round: about 1 ms of work at 10 GB/s, at least one */
        int calls = (int)(1e7 / (double)bytes) + 1;
        double rounds_t[2][64];
        int rounds = 0;
        tensor_dist_all_reduce(t, TENSOR_REDUCE_SUM); /* warm-up: both ways' paths and buffers */
        MPI_Allreduce(MPI_IN_PLACE, p, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double start = MPI_Wtime();
        int go = 1;
        while (go && rounds < 64) {
            for (int way = 0; way < 2; way++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                for (int c = 0; c < calls; c++) {
                    if (way == 0) { if (tensor_dist_all_reduce(t, TENSOR_REDUCE_SUM) != 0) { fprintf(stderr, "%s\n", tensor_last_error()); return 1; } }
                    else MPI_Allreduce(MPI_IN_PLACE, p, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                }
                rounds_t[way][rounds] = (MPI_Wtime() - t0) / calls;
            }
            rounds++;
            /* rank 0 decides when to stop, for every rank */
            go = rounds < 3 || MPI_Wtime() - start < budget;
            MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
            /* keep the values finite: sums of ones double each call */
            for (int64_t i = 0; i < n; i++) p[i] = 1;
        }
        double med[2];
        for (int way = 0; way < 2; way++) {
            qsort(rounds_t[way], (size_t)rounds, sizeof(double), cmp_double);
            med[way] = rounds_t[way][rounds / 2];
        }
        double bus = 2.0 * (world - 1) / world * (double)bytes;
        if (rank == 0)
            printf("%10lld %9.2f GB/s %7.1f us %9.2f GB/s %7.1f us  tensor.h is %5.2fx MPI's speed\n", (long long)bytes, bus / med[0] / 1e9, med[0] * 1e6,
                   bus / med[1] / 1e9, med[1] * 1e6, med[1] / med[0]);
        fflush(stdout);
        tensor_free(t);
    }
    tensor_dist_finalize();
    tensor_shutdown();
    return 0;
}
