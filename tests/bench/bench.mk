# `make bench`: benchmarks in the kernel-rig VM (tests/bench/README.md). Not part of `make test`.
.PHONY: bench bench-setup

# BENCH_ARGS go to run-bench (and on to pytest in the VM), e.g.
#   make bench BENCH_ARGS="--bench-only schedulers --bench-schedulers rr,wrr,lc,wlc"
bench: setup bench-setup
	tests/bench/run-bench $(BENCH_ARGS)

# HAProxy (the user-space proxy compared with IPVS) from Debian; matplotlib for the report's plots.
bench-setup:
	@command -v haproxy >/dev/null || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q haproxy; }
	@$(PYTHON) -c 'import matplotlib' 2>/dev/null || $(PYTHON) -m pip install -q -r tests/bench/requirements.txt
