# Loom Lab: two single-file programs and their tests.
#
#   make            build ./sim and ./aggregator
#   make test       build and run every test (no display, loopback only)
#   make asan       the same tests under AddressSanitizer + UBSan (in build/asan/)
#   make valgrind   the runtime's tests and the simulator under Valgrind's Memcheck
#   make test-simple the runtime's tests on its simplest correct form (no fast paths)
#   make run        the simulator on the default scenario (window if a display exists,
#                   otherwise a headless report and a PNG screenshot)
#   make bench      benchmarks: simulator speed, the window, our two modes beside the Go peer
#                   under wrk (ratios printed), the pooling grid
#   make check-verdict the steady-state verdict's false-alarm and detection rates, full size
#   make check-verdict-near  the same near saturation (rho 0.99) over more seeds, left out of CI
#   make check-model  the simulator's prediction of a real aggregator run here (a measurement,
#                   kept out of make test: it reports its timing noise beside the verdict)
#   make format-check the code is in the one dialect of .clang-format
#   make study      the studies measured for real (about an hour, a quiet machine): the
#                   15.8x at 3,200 users and the ephemeral-port wall, C and JVM, beside the
#                   simulator's prediction; writes out/study/study.md
#   make tutorial-check every output quoted in README.md and TUTORIAL.md is printed now, and every
#                   command in their sh blocks runs (those marked long are listed, not run)
#   make java       compile java/Aggregator.java into build/java/ (skips without a JDK 21+)
#   make jvm-diagnose the JVM aggregator pinned under JFR and parked in a thread dump, by hand
#   make clean
#
# Flags are overridable: make CC=clang CFLAGS="-O0 -g".

CC      ?= cc
CFLAGS  ?= -O2 -g
O       ?= .
STD      = -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror
SDL_CF  := $(shell pkg-config --cflags sdl2 stb 2>/dev/null)
SDL_LD  := $(shell pkg-config --libs sdl2 stb 2>/dev/null)
SAN      = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined

TESTS    = $(O)/tests/test_sim $(O)/tests/test_ui $(O)/tests/test_aggregator $(O)/tests/test_faults \
           $(O)/tests/floor $(O)/tests/test_verdict

.PHONY: all test test-simple asan tsan valgrind run bench fuzz tutorial-images tutorial-check calibrate check-verdict check-verdict-rates check-verdict-warmup check-verdict-near check-model format-check java jvm-diagnose blog-jvm study study-assets study-images clean
all: $(O)/sim $(O)/aggregator

$(O)/sim: sim.c
	@mkdir -p $(O)
	$(CC) $(STD) $(CFLAGS) $(SDL_CF) -o $@ sim.c $(SDL_LD) -lm

$(O)/aggregator: aggregator.c
	@mkdir -p $(O)
	$(CC) $(STD) $(CFLAGS) -o $@ aggregator.c -lpthread -lm -lcrypto

# Tests include the shipped .c file with its main() compiled out (SIM_NO_MAIN / AGG_NO_MAIN).
$(O)/tests/test_sim: tests/test_sim.c sim.c tests/check.h
	@mkdir -p $(O)/tests
	$(CC) $(STD) $(CFLAGS) $(SDL_CF) -I. -o $@ tests/test_sim.c $(SDL_LD) -lm

# The steady-state verdict's error rates over a fixed list of seeds (make test: a subset).
$(O)/tests/test_verdict: tests/test_verdict.c sim.c tests/check.h
	@mkdir -p $(O)/tests
	$(CC) $(STD) $(CFLAGS) $(SDL_CF) -I. -o $@ tests/test_verdict.c $(SDL_LD) -lm

$(O)/tests/test_ui: tests/test_ui.c sim.c tests/check.h
	@mkdir -p $(O)/tests
	$(CC) $(STD) $(CFLAGS) $(SDL_CF) -I. -o $@ tests/test_ui.c $(SDL_LD) -lm

$(O)/tests/test_aggregator: tests/test_aggregator.c aggregator.c tests/check.h
	@mkdir -p $(O)/tests
	$(CC) $(STD) $(CFLAGS) -I. -o $@ tests/test_aggregator.c -lpthread -lm -lcrypto

# Fault injection against the real ./aggregator as a process (bad backends, bad clients, EMFILE).
$(O)/tests/test_faults: tests/test_faults.c tests/check.h
	@mkdir -p $(O)/tests
	$(CC) $(STD) $(CFLAGS) -I. -o $@ tests/test_faults.c -lpthread

test: all $(TESTS)
	@sh tests/run $(O)

# The JVM's tests (tests/test_java.sh) are left out, counted as skipped: they test the JVM,
# whose behaviour no build of ours changes, and run once in make test. tests/lsan.supp names
# the system libraries' leaks LeakSanitizer is not to count (ours all count).
asan:
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp $(MAKE) O=build/asan CFLAGS="$(SAN)" \
	    NO_JVM_TESTS="the JVM's tests run once, in make test" test

# Memcheck on what runs: the aggregator's tests (the runtime, both servers), built with
# VT_VALGRIND so that its run stacks are registered with Valgrind, and the simulator on the
# default scenario, headless (its window cut to 2 s past the warm-up: the same code paths,
# fewer events) and drawn. An error or a definite leak fails; CI runs it.
# tests/test_sim under Memcheck is clean too but takes minutes: VG_ALL=1 adds it.
# --fair-sched: Valgrind runs one thread at a time, and without a fair lock a carrier that
# spins keeps it, so the runtime's work-stealing tests would wait out their deadlines.
VG = valgrind -q --fair-sched=yes --error-exitcode=9 --leak-check=full \
     --show-leak-kinds=definite --errors-for-leak-kinds=definite
build/valgrind/tests/test_aggregator: tests/test_aggregator.c aggregator.c tests/check.h
	@mkdir -p build/valgrind/tests
	$(CC) $(STD) -O1 -g -DVT_VALGRIND -I. -o $@ tests/test_aggregator.c -lpthread -lm -lcrypto
valgrind: build/valgrind/tests/test_aggregator $(O)/sim $(if $(VG_ALL),$(O)/tests/test_sim)
	$(VG) build/valgrind/tests/test_aggregator
	$(VG) $(O)/sim --headless scenarios/default.scn --set duration=4s > /dev/null
	$(VG) $(O)/sim scenarios/default.scn --screenshot build/valgrind/default.png --at 1s
	$(if $(VG_ALL),$(VG) $(O)/tests/test_sim)
	@echo "valgrind: no error, no definite leak"

# The aggregator's tests on the runtime in its simplest correct form: built with VT_SIMPLE,
# every call of the seam to the fast paths (aggregator.c, I.9) is its simple form.
build/simple/tests/test_aggregator: tests/test_aggregator.c aggregator.c tests/check.h
	@mkdir -p build/simple/tests
	$(CC) $(STD) $(CFLAGS) -DVT_SIMPLE -I. -o $@ tests/test_aggregator.c -lpthread -lm -lcrypto
test-simple: build/simple/tests/test_aggregator
	build/simple/tests/test_aggregator

# The aggregator's tests (the virtual-thread runtime, both servers) under ThreadSanitizer:
# clang, with the context switch annotated as fiber switches. CI runs it.
tsan:
	@mkdir -p build/tsan/tests
	clang $(STD) -O1 -g -fsanitize=thread -I. -o build/tsan/tests/test_aggregator tests/test_aggregator.c -lpthread -lm -lcrypto
	build/tsan/tests/test_aggregator

# Every output quoted in README.md and TUTORIAL.md (blocks marked <!-- check: CMD -->) is
# what the programs print now, and every command of their sh blocks exits as the text says
# (tests/tutorial_check.sh's header has the markers).
tutorial-check: $(O)/sim $(O)/aggregator
	@sh tests/tutorial_check.sh $(O)

# The verdict's rates at full size: 200 seeds of both models, and near-saturation systems
# long enough to be steady, and the warm-up read from a queue filling from empty (about 100 s
# of CPU; CI runs it, as its two parts: check-verdict-rates, and check-verdict-warmup beside
# tutorial-images). check-verdict-near runs the systems at rho 0.99, M/D/1 and M/G/1 among
# them, over more seeds, and the warm-up over more (minutes of CPU; CI leaves it out).
check-verdict: $(O)/tests/test_verdict
	@$(O)/tests/test_verdict --full
check-verdict-rates check-verdict-warmup: $(O)/tests/test_verdict
	@$(O)/tests/test_verdict --full-$(@:check-verdict-%=%)
check-verdict-near: $(O)/tests/test_verdict
	@$(O)/tests/test_verdict --near

# The calibration loop, small: the model against a real run of ./aggregator on this machine.
check-model: all
	@sh tests/check_model.sh $(O)

# One dialect for both programs (.clang-format); CI fails on any difference.
FORMATTED = sim.c aggregator.c tests/floor.c
format-check:
	clang-format --dry-run --Werror $(FORMATTED)

# The JVM aggregator, compiled (java/Aggregator.java also runs as a source file without this).
java:
	@jdk=$$(sh java/find-jdk) && cp=$$(sh java/find-jdk --classpath) || exit 0; \
	mkdir -p build/java && $$(dirname $$jdk)/javac -d build/java -cp "$$cp" java/Aggregator.java && \
	echo "java: compiled build/java/ with $$jdk"

# TUTORIAL ch. 12's diagnosis, run: a JVM pinned by --pin native, recorded by JFR (its
# jdk.VirtualThreadPinned events and their stacks), and one whose virtual threads park, in a
# thread dump (jcmd Thread.dump_to_file), both under a little load; about a minute. Without a
# JDK 21+ or Tomcat's jars: one line, exit 0. Writes out/diagnose/.
jvm-diagnose: $(O)/aggregator java
	@sh tests/jvm_diagnose.sh $(O)

# The blog's experiment on the real JVM (5-9 minutes, loopback only): Tomcat platform and
# virtual at 100 and 1000 users, K = 3 calls of D = 50 ms; the JVM's own costs measured first
# (calibrate --server java), then the measured OS threads and throughput beside the
# simulator's prediction from them. Without a JDK 21+ or Tomcat's jars: one line, exit 0.
# Writes out/java-blog.ini, out/blog-jvm.csv and out/blog-jvm.txt.
blog-jvm: $(O)/sim $(O)/aggregator java
	@if ! why=$$(sh java/find-jdk 2>&1 >/dev/null && sh java/find-jdk --classpath 2>&1 >/dev/null); then \
	    echo "blog-jvm: skipped: $$why"; exit 0; fi; \
	mkdir -p out && \
	$(O)/aggregator calibrate --server java --out out/java-blog.ini --duration 2 --runs 1 >/dev/null && \
	$(O)/aggregator bench --server java --users 100,1000 --modes platform,virtual --fanout 3 --delay-ms 50 \
	    --duration 4 --out out/blog-jvm.csv && \
	$(O)/sim --validate out/blog-jvm.csv --calibration out/java-blog.ini --server java | tee out/blog-jvm.txt && \
	echo "blog-jvm: the blog's JVM had 125 (100 users) and 222 (1000) OS threads in platform mode, 28-30 in virtual"

# The studies on the real programs, predicted and drawn (tests/study's header says what runs).
# `make study-assets` then copies the measurement files into assets/study/, from which
# `make tutorial-images` draws the pictures README and TUTORIAL show.
study: $(O)/sim $(O)/aggregator java
	@sh tests/study $(O) out/study
STUDY_FILES = c.ini java.ini massive-c.csv massive-java.csv wall-c-timeline.csv \
              wall-java-timeline.csv wall-c-pooled-timeline.csv wall-java-pooled-timeline.csv \
              wall-c.csv wall-java.csv wall-c-pooled.csv wall-java-pooled.csv blog-jvm.csv study.md \
              machine.txt massive-c.txt massive-java.txt wall-c.txt wall-java.txt wall-c-pooled.txt \
              wall-java-pooled.txt blog-jvm.txt fail-c.csv fail-java.csv fail-c.txt fail-java.txt \
              auth-c.ini auth-c-massive.csv auth-c-massive.txt auth-c-cpu.csv auth-c-cpu.txt \
              auth-java.ini auth-java-cpu.csv auth-java-cpu.txt
study-assets:
	@mkdir -p assets/study && for f in $(STUDY_FILES); do \
	    [ -f out/study/$$f ] && cp out/study/$$f assets/study/$$f; done; ls assets/study

run: $(O)/sim
	@if [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ]; then $(O)/sim scenarios/default.scn; \
	else $(O)/sim --headless scenarios/default.scn && \
	     $(O)/sim scenarios/default.scn --screenshot default.png --at 5s && echo "wrote default.png"; fi

# Every picture in TUTORIAL.md and README.md, drawn by the simulator (CI checks they are current).
# One per shipped scenario (NAME:TIME), plus the default in the light theme.
TUTORIAL_SHOTS = default:5s blog-100:8s blog-1000:8s massive-io:6s no-pool:130s pool-fixed:10s \
                 pinning:8s pinning-fixed:8s cpu-bound:8s mixed:8s fanout:5s mmc:20s
SWEEP_USERS = 10,30,100,300,1000,3000,10000
# the JVM's own threads beside the pool (25) and beside the carriers (27), measured (TUTORIAL ch. 10)
JVM_THREADS = --set platform.runtime_threads=25 --set virtual.runtime_threads=27
tutorial-images: $(O)/sim
	@for shot in $(TUTORIAL_SHOTS); do \
	    $(O)/sim scenarios/$${shot%%:*}.scn --screenshot assets/$${shot%%:*}.png --at $${shot#*:} || exit 1; \
	done; \
	$(O)/sim scenarios/default.scn --screenshot assets/default-light.png --at 5s --theme light && \
	$(O)/sim --headless --sweep users=$(SWEEP_USERS) scenarios/default.scn --plot assets/sweep-users.png > /dev/null && \
	$(O)/sim --headless --sweep users=100,300,1000,3000 $(JVM_THREADS) scenarios/default.scn \
	    --plot assets/sweep-jvm.png > /dev/null && \
	$(O)/sim --headless --sweep service.orders.limit=10,30,100,300,1000 scenarios/default.scn \
	    --plot assets/sweep-limit.png > /dev/null && \
	echo "tutorial-images: wrote $(words $(TUTORIAL_SHOTS)) scenario images, default-light.png and three sweeps in assets/" && \
	$(MAKE) -s study-images O=$(O)

# The study's pictures, from the measurement files make study wrote and make study-assets
# committed: measured points on the predicted curves (C, JVM), the port wall over time and the
# fan-out under failures (cancel against wait), the secured endpoint's throughput;
# then its report, study.md, with the simulator's predictions of today (tests/study --report).
# Without a calibration of the JVM (none is committed: calibrate refused the JVM's run-to-run
# spread of CPU when the study ran), its runtime threads as counted at idle (JVM_THREADS), as
# tests/study does.
# NAME:SERVER[:CAL]: CAL.ini, where a step has a calibration of its own, else SERVER.ini.
STUDY_PLOTS = massive-c:c massive-java:java wall-c-timeline:c wall-java-timeline:java \
	fail-c:c fail-java:java auth-c-cpu:c:auth-c auth-java-cpu:java:auth-java
study-images: $(O)/sim
	@for p in $(STUDY_PLOTS); do f=$${p%%:*}; r=$${p#*:}; s=$${r%%:*}; i=$${r#*:}; \
	    [ -f assets/study/$$f.csv ] || { echo "study-images: no assets/study/$$f.csv (make study)"; continue; }; \
	    cal=""; [ $$s = java ] && cal="$(JVM_THREADS)"; \
	    [ -f assets/study/$$i.ini ] && cal="--calibration assets/study/$$i.ini"; \
	    $(O)/sim --validate assets/study/$$f.csv $$cal --server $$s --plot assets/study/$$f.png > /dev/null || exit 1; \
	done; sh tests/study $(O) assets/study --report && \
	echo "study-images: drew the study's pictures in assets/study/ and wrote its study.md again"

# libFuzzer targets (clang): the scenario parser + engine, --validate's results CSV (and the
# first point it accepts, simulated), a calibration file, the HTTP request and response
# parsers. Each runs FUZZ_SECONDS from its seed corpus in tests/corpus/; a crash stops make.
# The small parsers (--sweep lists, --live's metrics page) run a quarter of that (at least
# 1 s): their inputs are a few dozen bytes and their coverage stops growing within seconds,
# so CI's fuzz time grows by a little, not by FUZZ_SECONDS each.
FUZZ_SECONDS ?= 60
FUZZ_SMALL    = sweep live
FUZZ_CC       = clang -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-function -O1 -g \
                -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I.
FUZZERS       = build/fuzz/fuzz_scenario build/fuzz/fuzz_validate build/fuzz/fuzz_calibration \
                build/fuzz/fuzz_http_request build/fuzz/fuzz_http_response build/fuzz/fuzz_sweep \
                build/fuzz/fuzz_live build/fuzz/fuzz_jwt

# Each fuzzer is one test file (FUZZ_DEF picks a variant) built with the program it includes.
build/fuzz/fuzz_scenario build/fuzz/fuzz_sweep build/fuzz/fuzz_live: \
    build/fuzz/fuzz_%: tests/fuzz_%.c sim.c
build/fuzz/fuzz_validate build/fuzz/fuzz_calibration: tests/fuzz_readers.c sim.c
build/fuzz/fuzz_http_request build/fuzz/fuzz_http_response: tests/fuzz_http.c aggregator.c
build/fuzz/fuzz_jwt: tests/fuzz_jwt.c aggregator.c
build/fuzz/fuzz_calibration: FUZZ_DEF = -DFUZZ_CALIBRATION
build/fuzz/fuzz_http_response: FUZZ_DEF = -DFUZZ_RESPONSE
build/fuzz/fuzz_http_request build/fuzz/fuzz_http_response build/fuzz/fuzz_jwt: FUZZ_SDL_CF =
build/fuzz/fuzz_http_request build/fuzz/fuzz_http_response build/fuzz/fuzz_jwt: FUZZ_SDL_LD = \
    -lcrypto
FUZZ_SDL_CF = $(SDL_CF)
FUZZ_SDL_LD = $(SDL_LD)
$(FUZZERS):
	@mkdir -p build/fuzz
	$(FUZZ_CC) $(FUZZ_DEF) $(FUZZ_SDL_CF) -o $@ $< $(FUZZ_SDL_LD) -lpthread -lm

# Each fuzzer is its own target, so make -j2 fuzz runs two at a time (libFuzzer uses one core).
# A fuzzer's summary is printed in one piece when it ends, so parallel runs do not interleave.
FUZZ_NAMES    = scenario validate calibration http_request http_response jwt $(FUZZ_SMALL)

fuzz: $(FUZZ_NAMES:%=fuzz-run-%)
	@echo "fuzz: no crash"

fuzz-run-%: build/fuzz/fuzz_%
	@t=$(FUZZ_SECONDS); case " $(FUZZ_SMALL) " in *" $* "*) t=$$(( ($$t + 3) / 4 )) ;; esac; \
	mkdir -p build/fuzz/corpus_$*; \
	build/fuzz/fuzz_$* -max_total_time=$$t -max_len=4096 -timeout=10 -print_final_stats=1 \
	    -artifact_prefix=build/fuzz/$*- build/fuzz/corpus_$* tests/corpus/$* > build/fuzz/$*.log 2>&1; \
	rc=$$?; \
	{ echo "fuzz: $* for $$t s"; \
	  grep -E 'stat::number_of_executed_units|stat::new_units_added|ERROR|SUMMARY|Test unit written' \
	      build/fuzz/$*.log; } ; \
	if [ $$rc -ne 0 ] || ls build/fuzz/$*-* >/dev/null 2>&1; then echo "fuzz: $* found a crash (build/fuzz/$*.log)"; exit 1; fi

# The calibration loop on this machine (a few minutes, loopback only): measure the costs,
# run the real aggregator over a grid, and have the simulator predict every point; the
# grid's last points check an RS256 bearer token (bench --auth), I/O-bound at D = 50 ms and
# CPU-bound at 5 ms, predicted with the token check's CPU calibrate measured.
# Writes out/calibration.ini, out/results.csv, out/validation.txt and out/validation.json.
CAL_SECONDS ?= 3
CAL_RUNS    ?= 3
calibrate: $(O)/sim $(O)/aggregator
	@mkdir -p out
	$(O)/aggregator calibrate --out out/calibration.ini --duration $(CAL_SECONDS) --runs $(CAL_RUNS)
	$(O)/aggregator bench --users 10,100,1000,5000 --pool on --delay-ms 50 --duration $(CAL_SECONDS) --runs $(CAL_RUNS) --out out/d50.csv
	$(O)/aggregator bench --users 1000 --pool off --delay-ms 50 --duration $(CAL_SECONDS) --runs $(CAL_RUNS) --out out/nopool.csv
	$(O)/aggregator bench --users 10,100,1000,5000 --pool on --delay-ms 5 --duration $(CAL_SECONDS) --runs $(CAL_RUNS) --out out/d5.csv
	$(O)/aggregator bench --users 100 --pool on --delay-ms 50 --auth rs256 --duration $(CAL_SECONDS) --runs $(CAL_RUNS) --out out/auth50.csv
	$(O)/aggregator bench --users 1000 --pool on --delay-ms 5 --auth rs256 --duration $(CAL_SECONDS) --runs $(CAL_RUNS) --out out/auth5.csv
	@{ cat out/d50.csv; for f in nopool d5 auth50 auth5; do tail -n +2 out/$$f.csv; done; } > out/results.csv
	$(O)/sim --validate out/results.csv --calibration out/calibration.ini | tee out/validation.txt
	@$(O)/sim --validate out/results.csv --calibration out/calibration.ini --json > out/validation.json

# The kernel's floor of CPU per request: the same /aggregate with no runtime (tests/floor.c's
# header says why). make bench runs it beside ./aggregator; test_faults checks its answers.
$(O)/tests/floor: tests/floor.c
	@mkdir -p $(O)/tests
	$(CC) $(STD) $(CFLAGS) -o $@ tests/floor.c -lpthread

$(O)/tests/bench_ui: tests/bench_ui.c sim.c
	@mkdir -p $(O)/tests
	$(CC) $(STD) $(CFLAGS) $(SDL_CF) -I. -o $@ tests/bench_ui.c $(SDL_LD) -lm

bench: all $(O)/tests/bench_ui $(O)/tests/floor
	@sh tests/bench $(O)

clean:
	rm -rf sim aggregator tests/test_sim tests/test_ui tests/test_aggregator tests/test_faults tests/test_verdict tests/bench_ui tests/floor build
