# tensor.h build. `make` regenerates tensor.h and builds the examples; `make test` runs the suite.
CC      ?= cc
CXX     ?= c++
CFLAGS  ?= -O2 -g
WARN     = -Wall -Wextra
LDLIBS   = -lm -lpthread
BUILD   ?= build
# Jobs in parallel, one per core (`make JOBS=1 ...` for one at a time; sub-makes share the top
# make's jobs): `make test` builds some fifty objects, the CUDA translation unit twice and the
# aarch64 suite.
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
ifeq ($(MAKELEVEL),0)
MAKEFLAGS += -j$(JOBS)
endif
SAN      = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

PARTS    = $(shell grep -v '^\#' generator/manifest.txt)
FILE_LOADERS = safetensors npy npz  # the file loaders, each with a fuzzer (tests/fuzz/fuzz_files.c)
FUZZ_HEADERS = tests/fuzz/fuzz_main.h tests/fuzz/replay.h
TEST_SRC = $(sort $(wildcard tests/test_*.c))
EXAMPLES = $(patsubst %.c,%,$(wildcard examples/*.c))

.PHONY: bench-dist all cuda gpu-pass test test-asan test-tsan test-neon test-sleef test-cuda check-amalgamation examples bench bench-nn bench-gpt bench-cuda fuzz fuzz-files clean
all: tensor.h examples

generator/gen: generator/gen.c
	$(CC) -O2 $(WARN) -o $@ $<

tensor.h: generator/gen generator/manifest.txt ops.def $(PARTS)
	generator/gen generator/manifest.txt ops.def > tensor.h.tmp.$$$$ && mv tensor.h.tmp.$$$$ tensor.h

check-amalgamation: generator/gen
	@generator/gen generator/manifest.txt ops.def > .amalgamation.tmp.$$$$; \
	 if cmp -s .amalgamation.tmp.$$$$ tensor.h; then rm -f .amalgamation.tmp.$$$$; echo "check-amalgamation: tensor.h matches its sources"; \
	 else rm -f .amalgamation.tmp.$$$$; echo "check-amalgamation: tensor.h is stale; run: make tensor.h && git add tensor.h"; exit 1; fi

# Optional packages: a C compiler and make are enough for `make` and `make test`; what needs a
# package that is missing is skipped with a line `skipped: WHAT (apt-get install PACKAGE)`. Each
# probe compiles and links a one-line program, its header declaring what it calls (PROBE makes an
# undeclared function an error, not gcc's warning); `make HAVE_ZLIB=` builds as if zlib were missing.
comma := ,
PROBE = $(CC) -x c -Werror=implicit-function-declaration
HAVE_ZLIB := $(shell printf 'int main(void){return zlibVersion() == 0;}' | $(PROBE) -include zlib.h - -lz -o /dev/null 2>/dev/null && echo yes)
HAVE_SLEEF := $(shell printf 'int main(void){return Sleef_expf_u10(0) == 0;}' | $(PROBE) -include sleef.h - -lsleef -lm -o /dev/null 2>/dev/null && echo yes)
HAVE_OPENBLAS = $(shell printf 'int main(void){return cblas_sdot(0, 0, 1, 0, 1) != 0;}' | $(PROBE) -include cblas.h - -lopenblas -o /dev/null 2>/dev/null && echo yes)

# The Fashion-MNIST examples read gzip files (zlib1g-dev).
ZLIB_EXAMPLES = $(filter examples/fashion_mnist_%,$(EXAMPLES))
examples: $(if $(HAVE_ZLIB),$(EXAMPLES),$(filter-out $(ZLIB_EXAMPLES),$(EXAMPLES)))
	$(if $(HAVE_ZLIB),,@echo "skipped: $(subst $() ,$(comma) ,$(ZLIB_EXAMPLES)) (apt-get install zlib1g-dev)")
examples/%: examples/%.c examples/train_util.h tensor.h
	$(CC) $(CFLAGS) $(WARN) -I. $< -o $@ $(LDLIBS)
examples/fashion_mnist_%: LDLIBS += -lz

# The suite: one binary from tests/main.c (the implementation) and every tests/test_*.c.
$(BUILD)/tests/%.o: tests/%.c tests/test.h tests/device_sweep.h tests/device_grad_sweep.h tensor.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(WARN) -I. -c $< -o $@
# tests/test_cuda_mirror.c is the CUDA suite (tests/cuda/test_cuda.c) on the seam's mirror device
$(foreach d,tests asan tsan neon sleef,$(BUILD)/$(d)/test_cuda_mirror.o): tests/cuda/test_cuda.c
# tests/test_gpt.c includes examples/gpt.c (its functions, without main)
$(foreach d,tests asan tsan neon sleef,$(BUILD)/$(d)/test_gpt.o): examples/gpt.c tests/gpt_text.h
$(BUILD)/tests/test_all: $(BUILD)/tests/main.o $(patsubst tests/%.c,$(BUILD)/tests/%.o,$(TEST_SRC))
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/asan/%.o: tests/%.c tests/test.h tests/device_sweep.h tests/device_grad_sweep.h tensor.h
	@mkdir -p $(dir $@)
	$(CC) -O1 -g $(SAN) $(WARN) -I. -c $< -o $@
$(BUILD)/asan/test_all: $(BUILD)/asan/main.o $(patsubst tests/%.c,$(BUILD)/asan/%.o,$(TEST_SRC))
	$(CC) -O1 -g $(SAN) $^ -o $@ $(LDLIBS)

$(BUILD)/tsan/%.o: tests/%.c tests/test.h tests/device_sweep.h tests/device_grad_sweep.h tensor.h
	@mkdir -p $(dir $@)
	$(CC) -O1 -g -fsanitize=thread $(WARN) -I. -c $< -o $@
$(BUILD)/tsan/test_all: $(BUILD)/tsan/main.o $(patsubst tests/%.c,$(BUILD)/tsan/%.o,$(TEST_SRC))
	$(CC) -O1 -g -fsanitize=thread $^ -o $@ $(LDLIBS)

# The NEON instance: the suite cross-compiled for aarch64 and run under qemu-user, once as built
# (neon) and once more for the vector tests with the scalar instance. `make test` runs it when the
# cross compiler (it must link a static program) and qemu are installed (Debian:
# gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user), and both say skipped otherwise. The ULP
# sweeps use fewer points there: qemu is slow.
AARCH64_CC ?= aarch64-linux-gnu-gcc
QEMU_AARCH64 ?= qemu-aarch64
HAVE_NEON_TOOLS := $(shell command -v $(QEMU_AARCH64) > /dev/null 2>&1 && printf 'int main(void){return 0;}' | $(AARCH64_CC) -x c - -static -o /dev/null 2>/dev/null && echo yes)
NEON_SKIPPED = test-neon (apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)
$(BUILD)/neon/%.o: tests/%.c tests/test.h tests/device_sweep.h tests/device_grad_sweep.h tensor.h
	@mkdir -p $(dir $@)
	$(AARCH64_CC) -O2 $(WARN) -I. -c $< -o $@
$(BUILD)/neon/test_all: $(BUILD)/neon/main.o $(patsubst tests/%.c,$(BUILD)/neon/%.o,$(TEST_SRC))
	$(AARCH64_CC) -O2 -static $^ -o $@ -lm -lpthread
test-neon: check-amalgamation $(if $(HAVE_NEON_TOOLS),$(BUILD)/neon/test_all)
	@$(if $(HAVE_NEON_TOOLS),,echo "skipped: $(NEON_SKIPPED)"; exit 0;) for simd in neon scalar; do \
	  filter=$$([ $$simd = neon ] || echo test_simd); \
	  if TENSOR_SIMD=$$simd TENSOR_TEST_ULP_POINTS=100000 TENSOR_TEST_RUNNER="$(QEMU_AARCH64) -L /usr/aarch64-linux-gnu" TEST_RUNNER="$(QEMU_AARCH64) -L /usr/aarch64-linux-gnu" \
	     TEST_FILTER=$$filter tests/run.sh $(BUILD)/neon/test_all --no-compile-matrix > $(BUILD)/neon/log 2>&1; \
	  then grep -E '^ *FAIL|^  simd ' $(BUILD)/neon/log; echo "neon-$$simd: $$(tail -n 1 $(BUILD)/neon/log)"; \
	  else cat $(BUILD)/neon/log; echo "neon-$$simd: FAILED"; exit 1; fi; \
	done

# The suite with -DTENSOR_USE_SLEEF: SLEEF's vector functions instead of ours (Debian: libsleef-dev).
$(BUILD)/sleef/%.o: tests/%.c tests/test.h tests/device_sweep.h tests/device_grad_sweep.h tensor.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(WARN) -DTENSOR_USE_SLEEF -I. -c $< -o $@
$(BUILD)/sleef/test_all: $(BUILD)/sleef/main.o $(patsubst tests/%.c,$(BUILD)/sleef/%.o,$(TEST_SRC))
	$(CC) $(CFLAGS) $^ -o $@ -lsleef $(LDLIBS)
test-sleef: check-amalgamation $(if $(HAVE_SLEEF),$(BUILD)/sleef/test_all)
	@$(if $(HAVE_SLEEF),tests/run.sh $(BUILD)/sleef/test_all --no-compile-matrix,echo "skipped: test-sleef (apt-get install libsleef-dev)")

# The .npz tests again with -DTENSOR_USE_ZLIB (deflated members, as np.savez_compressed writes) and
# with every archive written as ZIP64 (TENSOR__ZIP64_LIMIT=0), under the sanitizers; make test runs
# both (the first needs zlib1g-dev).
$(BUILD)/zlib/test_npy: tests/main.c tests/test_npy.c tests/test.h tensor.h
	@mkdir -p $(dir $@)
	$(CC) -O1 -g $(SAN) $(WARN) -DTENSOR_USE_ZLIB -I. tests/main.c tests/test_npy.c -o $@ $(LDLIBS) -lz
$(BUILD)/zip64/test_npy: tests/main.c tests/test_npy.c tests/test.h tensor.h
	@mkdir -p $(dir $@)
	$(CC) -O1 -g $(SAN) $(WARN) -DTENSOR__ZIP64_LIMIT=0 -I. tests/main.c tests/test_npy.c -o $@ $(LDLIBS)
NPY_BUILDS = $(if $(HAVE_ZLIB),$(BUILD)/zlib/test_npy) $(BUILD)/zip64/test_npy

# CUDA (tensor_cuda.cu): compiled with -Werror whenever nvcc is found (in PATH or /usr/local/cuda),
# and make test links it into the harness (tests/cuda/test_cuda_link.c: the object registers itself;
# without a GPU, CUDA says it is not available). make test-cuda runs the CUDA suite on a GPU.
NVCC ?= $(firstword $(shell command -v nvcc 2>/dev/null) $(wildcard /usr/local/cuda/bin/nvcc))
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
NVCCFLAGS ?= -O2
# Which GPU code an object holds. Machine code for the GPU(s) of this machine (-arch=native) when
# nvidia-smi lists one: the first CUDA call starts at once. Else a fat binary (make cuda): machine
# code for sm_80 to sm_120 and PTX of the newest for later GPUs, compiled by one nvcc thread per
# architecture. A GPU with no machine code in the object JIT-compiles the PTX at every process's
# first CUDA call (32 s on an H200 for nvcc's default sm_75 + PTX) unless the driver's cache holds it.
# Without a GPU nothing runs on a device, so make test's objects hold one architecture (sm_90).
NVCC_FAT = --threads 0 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=sm_86 -gencode arch=compute_89,code=sm_89 \
  -gencode arch=compute_90,code=sm_90 -gencode arch=compute_100,code=sm_100 -gencode arch=compute_110,code=sm_110 \
  -gencode arch=compute_120,code=sm_120 -gencode arch=compute_120,code=compute_120
NVCC_ARCH ?= $(if $(filter-out 0,$(CUDA_GPU_FOUND)),-arch=native,$(NVCC_FAT))
NVCC_TEST_ARCH ?= $(if $(filter-out 0,$(CUDA_GPU_FOUND)),-arch=native,-arch=sm_90)
CUDA_LDLIBS = -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lcublas -lstdc++
HAVE_CUDA_TU := $(if $(wildcard tensor_cuda.cu),$(NVCC))
CUDA_GPU_FOUND := $(if $(HAVE_CUDA_TU),$(shell nvidia-smi -L 2>/dev/null | grep -c '^GPU'),0)
# The optional cuDNN path (-DTENSOR_USE_CUDNN, linked with -lcudnn) is built beside it whenever
# cudnn.h is found: make test compiles and links it, make test-cuda runs the suite with it too.
HAVE_CUDNN := $(if $(HAVE_CUDA_TU),$(wildcard $(CUDA_HOME)/include/cudnn.h))
CUDA_BUILDS = $(if $(HAVE_CUDA_TU),$(BUILD)/cuda/test_cuda_link) $(if $(HAVE_CUDNN),$(BUILD)/cudnn/test_cuda_link)
CUDA_SKIPPED = $(if $(HAVE_CUDA_TU),$(if $(HAVE_CUDNN),,tensor_cuda.cu with -DTENSOR_USE_CUDNN (cudnn.h not found)),tensor_cuda.cu (nvcc not found: install the CUDA toolkit))
$(BUILD)/cuda/tensor_cuda.o: tensor_cuda.cu tensor.h
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $(NVCC_TEST_ARCH) -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror -c $< -o $@
# The CUDA suite links the CPU suite's test files too, for their gradient checks (its
# differentiable-op sweep, gpu_every_differentiable_op_forward_and_backward, runs them on the
# GPU); make test-cuda runs only its own tests (cuda_, gpu_).
CPU_TEST_OBJS = $(patsubst tests/%.c,$(BUILD)/tests/%.o,$(filter-out tests/test_cuda_mirror.c,$(TEST_SRC)))
# (each links the suite's main.o, the implementation, compiled once for test_all)
$(BUILD)/cuda/test_cuda: tests/cuda/test_cuda.c $(BUILD)/tests/main.o tests/test.h tests/device_sweep.h tests/device_grad_sweep.h tensor.h $(BUILD)/cuda/tensor_cuda.o $(CPU_TEST_OBJS)
	$(CC) $(CFLAGS) $(WARN) -I. $(BUILD)/tests/main.o $< $(CPU_TEST_OBJS) $(BUILD)/cuda/tensor_cuda.o -o $@ $(LDLIBS) $(CUDA_LDLIBS)
$(BUILD)/cuda/test_%: tests/cuda/test_%.c $(BUILD)/tests/main.o tests/test.h tests/device_sweep.h tensor.h $(BUILD)/cuda/tensor_cuda.o
	$(CC) $(CFLAGS) $(WARN) -I. $(BUILD)/tests/main.o $< $(BUILD)/cuda/tensor_cuda.o -o $@ $(LDLIBS) $(CUDA_LDLIBS)
$(BUILD)/cudnn/tensor_cuda.o: tensor_cuda.cu tensor.h
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $(NVCC_TEST_ARCH) -DTENSOR_USE_CUDNN -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror -c $< -o $@
$(BUILD)/cudnn/test_cuda: tests/cuda/test_cuda.c $(BUILD)/tests/main.o tests/test.h tests/device_sweep.h tests/device_grad_sweep.h tensor.h $(BUILD)/cudnn/tensor_cuda.o $(CPU_TEST_OBJS)
	$(CC) $(CFLAGS) $(WARN) -DTEST_WITH_CUDNN -I. $(BUILD)/tests/main.o $< $(CPU_TEST_OBJS) $(BUILD)/cudnn/tensor_cuda.o -o $@ $(LDLIBS) $(CUDA_LDLIBS) -lcudnn
$(BUILD)/cudnn/test_%: tests/cuda/test_%.c $(BUILD)/tests/main.o tests/test.h tests/device_sweep.h tensor.h $(BUILD)/cudnn/tensor_cuda.o
	$(CC) $(CFLAGS) $(WARN) -DTEST_WITH_CUDNN -I. $(BUILD)/tests/main.o $< $(BUILD)/cudnn/tensor_cuda.o -o $@ $(LDLIBS) $(CUDA_LDLIBS) -lcudnn
# make cuda: the object to link into programs, with the GPU code chosen above (NVCC_ARCH).
cuda: $(BUILD)/tensor_cuda.o
$(BUILD)/tensor_cuda.o: tensor_cuda.cu tensor.h
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $(NVCC_ARCH) -c $< -o $@
$(BUILD)/cuda/probe: tests/cuda/probe.c tensor.h $(BUILD)/cuda/tensor_cuda.o
	$(CC) $(CFLAGS) $(WARN) tests/cuda/probe.c $(BUILD)/cuda/tensor_cuda.o -o $@ $(LDLIBS) $(CUDA_LDLIBS)
# On a GPU the suite runs, then again under compute-sanitizer: memcheck over everything (API errors
# not reported: cuda_errors provokes out-of-memory cudaMalloc calls on purpose and checks what the
# library does with them), racecheck over the kernels that share memory (cuda_reductions and
# cuda_shared_memory: small shapes, so it takes seconds).
COMPUTE_SANITIZER ?= $(firstword $(shell command -v compute-sanitizer 2>/dev/null) $(wildcard $(CUDA_HOME)/bin/compute-sanitizer $(CUDA_HOME)/compute-sanitizer/compute-sanitizer))
test-cuda: check-amalgamation $(if $(HAVE_CUDA_TU),$(BUILD)/cuda/probe $(BUILD)/cuda/test_cuda) $(if $(HAVE_CUDNN),$(BUILD)/cudnn/test_cuda)
	@$(if $(HAVE_CUDA_TU),,echo "skipped: test-cuda (no nvcc: install the CUDA toolkit)"; exit 0;) \
	 if why=$$($(BUILD)/cuda/probe); then TEST_FILTER=cuda_,gpu_ tests/run.sh $(BUILD)/cuda/test_cuda --no-compile-matrix || exit 1; \
	   $(if $(HAVE_CUDNN),echo "with cuDNN (-DTENSOR_USE_CUDNN):"; TEST_FILTER=cuda_,gpu_ tests/run.sh $(BUILD)/cudnn/test_cuda --no-compile-matrix || exit 1;) \
	   $(if $(COMPUTE_SANITIZER),$(COMPUTE_SANITIZER) --tool memcheck --report-api-errors no --leak-check full --error-exitcode 1 $(BUILD)/cuda/test_cuda cuda_ > $(BUILD)/cuda/memcheck.log 2>&1 \
	     && echo "compute-sanitizer memcheck: clean" || { tail -n 40 $(BUILD)/cuda/memcheck.log; echo "compute-sanitizer memcheck: FAILED"; exit 1; }; \
	   $(COMPUTE_SANITIZER) --tool racecheck --error-exitcode 1 $(BUILD)/cuda/test_cuda cuda_reductions,cuda_shared_memory > $(BUILD)/cuda/racecheck.log 2>&1 \
	     && echo "compute-sanitizer racecheck (reductions, row kernels, scans, sort): clean" || { tail -n 40 $(BUILD)/cuda/racecheck.log; echo "compute-sanitizer racecheck: FAILED"; exit 1; },echo "skipped: compute-sanitizer (not found)";) \
	 else echo "skipped: no CUDA device ($$why)"; fi

# The collectives over MPI (tests/dist/test_dist_mpi.c, built with mpicc -DTENSOR_USE_MPI) on 2 and
# 3 ranks and over TCP alone (tests/dist/run.sh), whenever mpicc and mpirun are found; also built
# with AddressSanitizer and UBSan for make test-asan (Open MPI's own allocations are not checked
# for leaks there).
MPICC ?= mpicc
MPIRUN ?= mpirun
HAVE_MPI := $(shell command -v $(MPICC) > /dev/null 2>&1 && command -v $(MPIRUN) > /dev/null 2>&1 && echo yes)
MPI_SKIPPED = the MPI tests (apt-get install openmpi-bin libopenmpi-dev)
$(BUILD)/dist/test_dist_mpi: tests/dist/test_dist_mpi.c examples/gpt.c tests/gpt_text.h tensor.h
	@mkdir -p $(dir $@)
	$(MPICC) -O1 -g $(WARN) -DTENSOR_USE_MPI -I. $< -o $@ $(LDLIBS)
$(BUILD)/dist/asan-test_dist_mpi: tests/dist/test_dist_mpi.c examples/gpt.c tests/gpt_text.h tensor.h
	@mkdir -p $(dir $@)
	$(MPICC) -O1 -g $(SAN) $(WARN) -DTENSOR_USE_MPI -I. $< -o $@ $(LDLIBS)

test: check-amalgamation $(BUILD)/tests/test_all $(BUILD)/fuzz/replay $(foreach l,$(FILE_LOADERS),$(BUILD)/fuzz/replay-$(l)) $(NPY_BUILDS) $(CUDA_BUILDS) $(if $(HAVE_MPI),$(BUILD)/dist/test_dist_mpi) $(if $(HAVE_NEON_TOOLS),test-neon)
	@CC="$(CC)" CXX="$(CXX)" DIST_TESTS="$(if $(HAVE_MPI),$(BUILD)/dist/test_dist_mpi)" TESTS_SKIPPED4="$(if $(HAVE_MPI),,$(MPI_SKIPPED))" MPIRUN="$(MPIRUN)" FUZZ_REPLAY=$(BUILD)/fuzz/replay FUZZ_FILE_REPLAYS="$(foreach l,$(FILE_LOADERS),$(BUILD)/fuzz/replay-$(l))" EXTRA_TESTS="$(NPY_BUILDS)" CUDA_TESTS="$(CUDA_BUILDS)" TESTS_SKIPPED3="$(CUDA_SKIPPED)" TESTS_SKIPPED="$(if $(HAVE_NEON_TOOLS),,$(NEON_SKIPPED))" TESTS_SKIPPED2="$(if $(HAVE_ZLIB),,the .npz tests with zlib (apt-get install zlib1g-dev))" tests/run.sh $(BUILD)/tests/test_all

test-asan: check-amalgamation $(BUILD)/asan/test_all $(BUILD)/fuzz/replay-asan $(foreach l,$(FILE_LOADERS),$(BUILD)/fuzz/asan-replay-$(l)) $(if $(HAVE_MPI),$(BUILD)/dist/asan-test_dist_mpi)
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	 DIST_TESTS="$(if $(HAVE_MPI),$(BUILD)/dist/asan-test_dist_mpi)" MPIRUN="$(MPIRUN)" \
	 CC="$(CC)" CXX="$(CXX)" FUZZ_REPLAY=$(BUILD)/fuzz/replay-asan FUZZ_FILE_REPLAYS="$(foreach l,$(FILE_LOADERS),$(BUILD)/fuzz/asan-replay-$(l))" tests/run.sh $(BUILD)/asan/test_all --no-compile-matrix

# The suite under ThreadSanitizer (the pool runs on every core, so large ops use it).
test-tsan: check-amalgamation $(BUILD)/tsan/test_all
	@TSAN_OPTIONS=halt_on_error=1:allocator_may_return_null=1 CC="$(CC)" CXX="$(CXX)" tests/run.sh $(BUILD)/tsan/test_all --no-compile-matrix

# The API fuzzer, tests/fuzz/fuzz_api.c: make test (and test-asan) replays its corpus and the
# inputs of the bugs it found (tests/fuzz/regressions) with $(CC); make fuzz runs it under
# libFuzzer (clang) for FUZZ_SECONDS from a copy of the corpus and the regressions, unpacked one
# input a file (the committed files pack many small inputs each; the copy keeps them small). New
# inputs collect in $(BUILD)/fuzz/corpus, crashes in $(BUILD)/fuzz/crashes.
FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang
FUZZ_FLAGS = -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -max_len=4096 -timeout=10 -print_final_stats=1 -close_fd_mask=1
$(BUILD)/fuzz/replay: tests/fuzz/fuzz_api.c $(FUZZ_HEADERS) tensor.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(WARN) -I. $< -o $@ $(LDLIBS)
$(BUILD)/fuzz/replay-asan: tests/fuzz/fuzz_api.c $(FUZZ_HEADERS) tensor.h
	@mkdir -p $(dir $@)
	$(CC) -O1 -g $(SAN) $(WARN) -I. $< -o $@ $(LDLIBS)
$(BUILD)/fuzz/fuzz_api: tests/fuzz/fuzz_api.c $(FUZZ_HEADERS) tensor.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
	  -DFUZZ_LIBFUZZER $(WARN) -Wno-pass-failed -I. $< -o $@ $(LDLIBS)
# The file loaders' fuzzers, tests/fuzz/fuzz_files.c: one program, built once each way, and a link
# to it per loader whose name says the loader: make test replays each one's seed corpus
# (tests/fuzz/corpus_LOADER: valid files of every dtype and the malformed files of the tests) and
# make fuzz runs each for FUZZ_FILE_SECONDS, with zlib (deflated .npz members) when it links.
FUZZ_FILE_SECONDS ?= 60
FUZZ_ZLIB = $(if $(HAVE_ZLIB),-DTENSOR_USE_ZLIB,)
FUZZ_ZLIB_LIB = $(if $(HAVE_ZLIB),-lz,)
$(BUILD)/fuzz/files-replay: tests/fuzz/fuzz_files.c $(FUZZ_HEADERS) tensor.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(WARN) -I. $< -o $@ $(LDLIBS)
$(BUILD)/fuzz/files-asan-replay: tests/fuzz/fuzz_files.c $(FUZZ_HEADERS) tensor.h
	@mkdir -p $(dir $@)
	$(CC) -O1 -g $(SAN) $(WARN) -I. $< -o $@ $(LDLIBS)
$(BUILD)/fuzz/files-fuzz: tests/fuzz/fuzz_files.c $(FUZZ_HEADERS) tensor.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
	  -DFUZZ_LIBFUZZER $(FUZZ_ZLIB) $(WARN) -Wno-pass-failed -I. $< -o $@ $(LDLIBS) $(FUZZ_ZLIB_LIB)
$(foreach l,$(FILE_LOADERS),$(BUILD)/fuzz/replay-$(l)): $(BUILD)/fuzz/files-replay
	ln -f $< $@
$(foreach l,$(FILE_LOADERS),$(BUILD)/fuzz/asan-replay-$(l)): $(BUILD)/fuzz/files-asan-replay
	ln -f $< $@
$(foreach l,$(FILE_LOADERS),$(BUILD)/fuzz/fuzz_$(l)): $(BUILD)/fuzz/files-fuzz
	ln -f $< $@
FILE_FUZZ_FLAGS = -max_total_time=$(FUZZ_FILE_SECONDS) -rss_limit_mb=4096 -max_len=65536 -timeout=10 -print_final_stats=1
fuzz-files: $(foreach l,$(FILE_LOADERS),$(BUILD)/fuzz/fuzz_$(l))
	@for l in $(FILE_LOADERS); do \
	  rm -rf $(BUILD)/fuzz/corpus_$$l && mkdir -p $(BUILD)/fuzz/corpus_$$l $(BUILD)/fuzz/crashes_$$l && \
	  cp tests/fuzz/corpus_$$l/* $(BUILD)/fuzz/corpus_$$l/ && \
	  $(BUILD)/fuzz/fuzz_$$l $(FILE_FUZZ_FLAGS) -artifact_prefix=$(BUILD)/fuzz/crashes_$$l/ $(BUILD)/fuzz/corpus_$$l 2>&1 | \
	    grep -E '^(stat::|#[0-9]+ *DONE)|ERROR|SUMMARY|Done' || true; \
	  [ -z "$$(ls $(BUILD)/fuzz/crashes_$$l)" ] || { echo "fuzz_$$l: crashes in $(BUILD)/fuzz/crashes_$$l"; exit 1; }; \
	done

fuzz:
	@if ! printf 'int LLVMFuzzerTestOneInput(const char *d, long n) { return d && n < 0; }' | \
	     $(FUZZ_CC) -fsanitize=fuzzer -x c - -o /dev/null > /dev/null 2>&1; then echo "skipped: fuzz (apt-get install clang)"; exit 0; fi; \
	 $(MAKE) --no-print-directory $(BUILD)/fuzz/fuzz_api $(BUILD)/fuzz/replay $(foreach l,$(FILE_LOADERS),$(BUILD)/fuzz/fuzz_$(l)) && \
	 rm -rf $(BUILD)/fuzz/corpus && mkdir -p $(BUILD)/fuzz/corpus $(BUILD)/fuzz/crashes && \
	 $(BUILD)/fuzz/replay --unpack $(BUILD)/fuzz/corpus tests/fuzz/corpus tests/fuzz/regressions && \
	 $(BUILD)/fuzz/fuzz_api $(FUZZ_FLAGS) -artifact_prefix=$(BUILD)/fuzz/crashes/ $(BUILD)/fuzz/corpus && \
	 $(MAKE) --no-print-directory fuzz-files

# The benchmark: plain -O2 (no -march: the run-time ISA choice is what is measured), linked with
# the references (OpenBLAS, glibc's libmvec, SLEEF when -lsleef links). See bench/README.md.
BENCH_SLEEF = $(shell printf 'int main(void){return 0;}' | $(CC) -x c - -lsleef -o /dev/null 2>/dev/null && echo yes)
$(BUILD)/bench: bench/bench.c tensor.h
	@$(if $(HAVE_OPENBLAS),,echo "bench: needs OpenBLAS, the reference it measures against (apt-get install libopenblas-dev)"; exit 1)
	@mkdir -p $(BUILD)
	$(CC) -O2 $(WARN) -I. -DBENCH_CC='"$(CC)"' $(if $(BENCH_SLEEF),-DBENCH_SLEEF) bench/bench.c -o $@ -lopenblas -lmvec $(if $(BENCH_SLEEF),-lsleef) $(LDLIBS)
bench: $(BUILD)/bench
	$(BUILD)/bench
# The layers' fast paths against their composites (bench/bench_nn.c; no reference library).
$(BUILD)/bench_nn: bench/bench_nn.c tensor.h
	@mkdir -p $(BUILD)
	$(CC) -O2 $(WARN) -I. bench/bench_nn.c -o $@ $(LDLIBS)
bench-nn: $(BUILD)/bench_nn
	$(BUILD)/bench_nn
# The GPT example's model against PyTorch's, written the nanoGPT way (bench/compare_torch_gpt.py runs
# both, one process per item; tensor.h's side alone without python3-torch).
$(BUILD)/bench_gpt: bench/bench_gpt.c examples/gpt.c tensor.h
	@mkdir -p $(dir $@)
	$(CC) -O2 $(WARN) -I. bench/bench_gpt.c -o $@ $(LDLIBS)
bench-gpt: $(BUILD)/bench_gpt
	/usr/bin/python3 bench/compare_torch_gpt.py
# tensor_dist_all_reduce against MPI_Allreduce on the same buffers (bench/bench_dist.c), on
# MPIRUN_NP ranks of this machine (2 by default; MPIRUN_ARGS adds mpirun options, e.g. a hostfile).
MPIRUN_NP ?= 2
MPIRUN_ARGS ?=
$(BUILD)/bench_dist: bench/bench_dist.c tensor.h
	@$(if $(HAVE_MPI),,echo "bench-dist: needs MPI (apt-get install openmpi-bin libopenmpi-dev)"; exit 1)
	@mkdir -p $(dir $@)
	$(MPICC) -O2 $(WARN) -DTENSOR_USE_MPI -I. bench/bench_dist.c -o $@ $(LDLIBS)
bench-dist: $(BUILD)/bench_dist
	$(MPIRUN) $$([ "$$(id -u)" -ne 0 ] || echo --allow-run-as-root) --oversubscribe $(MPIRUN_ARGS) -np $(MPIRUN_NP) $(BUILD)/bench_dist
# make gpu-pass: what a GPU machine needs for one pass (tests/cuda/device_pass.sh), built here:
# the CUDA suite plain and with cuDNN, the start-up probe and the benchmark, for sm_90 (H100, H200;
# GPU_ARCH=sm_XX for another), stripped, in $(BUILD)/gpu-pass (carried there with the tree).
GPU_ARCH ?= sm_90
gpu-pass:
	@$(if $(HAVE_CUDA_TU),,echo "gpu-pass: needs nvcc"; exit 1;) \
	 $(MAKE) --no-print-directory BUILD=$(BUILD)/gpu-build NVCC_TEST_ARCH=-arch=$(GPU_ARCH) $(BUILD)/gpu-build/cuda/test_cuda $(BUILD)/gpu-build/cudnn/test_cuda \
	   $(BUILD)/gpu-build/bench_cuda $(BUILD)/gpu-build/cuda/first_call && \
	 mkdir -p $(BUILD)/gpu-pass && cp $(BUILD)/gpu-build/cuda/test_cuda $(BUILD)/gpu-build/cuda/first_call $(BUILD)/gpu-build/bench_cuda $(BUILD)/gpu-pass/ && \
	 cp $(BUILD)/gpu-build/cudnn/test_cuda $(BUILD)/gpu-pass/test_cudnn && strip $(BUILD)/gpu-pass/* && ls -la $(BUILD)/gpu-pass
$(BUILD)/cuda/first_call: tests/cuda/first_call.c tensor.h $(BUILD)/cuda/tensor_cuda.o
	$(CC) $(CFLAGS) $(WARN) tests/cuda/first_call.c $(BUILD)/cuda/tensor_cuda.o -o $@ $(LDLIBS) $(CUDA_LDLIBS)

# The CUDA benchmark (bench/bench_cuda.c, against cuBLAS and cudaMemcpy) on a machine with a GPU.
$(BUILD)/bench_cuda: bench/bench_cuda.c tensor.h $(BUILD)/cuda/tensor_cuda.o
	$(CC) -O2 $(WARN) -I. -I$(CUDA_HOME)/include bench/bench_cuda.c $(BUILD)/cuda/tensor_cuda.o -o $@ $(LDLIBS) $(CUDA_LDLIBS)
bench-cuda: $(if $(HAVE_CUDA_TU),$(BUILD)/bench_cuda)
	@$(if $(HAVE_CUDA_TU),rm -f $(BUILD)/bench_cuda.rows; BENCH_CUDA_ROWS=$(BUILD)/bench_cuda.rows $(BUILD)/bench_cuda && { [ ! -s $(BUILD)/bench_cuda.rows ] || python3 bench/compare_torch_cuda.py $(BUILD)/bench_cuda.rows || true; },echo "skipped: bench-cuda (no nvcc: install the CUDA toolkit)")

clean:
	rm -rf build generator/gen $(EXAMPLES)
