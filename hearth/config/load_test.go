package config

import (
	"errors"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/llm"
)

// fixture is one Load: a config file (in a temporary config dir, so the
// default path finds it), environment variables and flags.
type fixture struct {
	file string // hearth.toml's content; "" means no file
	env  map[string]string
	args []string
}

// load runs Load over fx, with the user's directories under /home/me.
// $DIR in args stands for the config dir holding the file, which load
// returns.
func (fx fixture) load(t *testing.T) (*Config, error, string) {
	t.Helper()
	dir := t.TempDir()
	if fx.file != "" {
		if err := os.MkdirAll(filepath.Join(dir, "mnemo"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "mnemo", FileName), []byte(fx.file), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fs := flag.NewFlagSet("hearth", flag.ContinueOnError)
	flags := Bind(fs)
	args := make([]string, len(fx.args))
	for i, a := range fx.args {
		args[i] = strings.ReplaceAll(a, "$DIR", dir)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	c, err := Load(LoadOptions{
		Flags:     flags,
		Getenv:    func(k string) string { return fx.env[k] },
		ConfigDir: dir, DataDir: "/home/me/.local/share", CacheDir: "/home/me/.cache",
	})
	return c, err, dir
}

// messages are err's problems, one per line, with the config dir as $DIR.
func messages(err error, dir string) []string {
	if err == nil {
		return nil
	}
	return strings.Split(strings.ReplaceAll(err.Error(), dir, "$DIR"), "\n")
}

func def(key string) Source { return Source{Origin: FromDefault, Name: key} }

// TestLoadDefaults: with nothing configured, every value is today's
// default (the flags' defaults, the environment readers' fallbacks).
func TestLoadDefaults(t *testing.T) {
	c, err, dir := fixture{}.load(t)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	str := func(key, v string) Setting[string] { return Setting[string]{v, def(key)} }
	want := &Config{
		File:           str("config", filepath.Join(dir, "mnemo", "hearth.toml")),
		Addr:           str("addr", "127.0.0.1:7744"),
		ListenRemote:   Setting[bool]{false, def("listen_remote")},
		HTTPAddr:       str("http", ""),
		TLS:            Setting[bool]{false, def("tls")},
		Root:           str("root", "/home/me/.local/share/mnemo"),
		TokenFile:      str("token_file", filepath.Join(dir, "mnemo", "token")),
		Gateway:        str("gateway", filepath.Join(dir, "mnemo", "gateway.json")),
		HistoryTurns:   Setting[int]{50, def("history")},
		ToolTimeout:    Setting[time.Duration]{time.Minute, def("tool_timeout")},
		ConfirmTimeout: Setting[time.Duration]{2 * time.Minute, def("confirm_timeout")},
		MaxIterations:  Setting[int]{0, def("max_iterations")},
		ContextBudget:  Setting[int]{24000, def("context_budget")},
		LogLevel:       Setting[slog.Level]{slog.LevelInfo, def("log_level")},
		LogFile:        str("log_file", ""),
		LogMaxSize:     Setting[int]{10, def("log_max_size")},
		LogBackups:     Setting[int]{5, def("log_backups")},
		LogCompress:    Setting[bool]{true, def("log_compress")},
		AuthToken:      Setting[Secret]{Source: def("auth_token")},
		Model: ModelConfig{
			Provider:         str("model.provider", ""),
			Name:             str("model.name", ""),
			Timeout:          Setting[time.Duration]{5 * time.Minute, def("model.timeout")},
			FirstByteTimeout: Setting[time.Duration]{time.Minute, def("model.first_byte_timeout")},
			IdleTimeout:      Setting[time.Duration]{time.Minute, def("model.idle_timeout")},
			XAIKey:           Setting[Secret]{Source: def("model.xai_api_key")},
			XAIBaseURL:       str("model.xai_base_url", ""),
			XAIAPI:           str("model.xai_api", "responses"),
			XAIServerTools:   Setting[[]string]{Source: def("model.xai_server_tools")},
			AnthropicKey:     Setting[Secret]{Source: def("model.anthropic_api_key")},
			AnthropicBaseURL: str("model.anthropic_base_url", ""),
			OpenAIKey:        Setting[Secret]{Source: def("model.openai_api_key")},
			OpenAIBaseURL:    str("model.openai_base_url", ""),
		},
		Recall: RecallConfig{
			Embedder:     str("recall.embedder", "auto"),
			Vectors:      str("recall.vectors", "/home/me/.cache/mnemo/wink-sg100-100k.bin"),
			EmbedModel:   str("recall.embed_model", ""),
			EmbedDim:     Setting[int]{0, def("recall.embed_dim")},
			EmbedBaseURL: str("recall.embed_base_url", ""),
			EmbedKey:     Setting[Secret]{Source: def("recall.embed_api_key")},
			QdrantAddr:   str("recall.qdrant_addr", ""),
			QdrantKey:    Setting[Secret]{Source: def("recall.qdrant_api_key")},
			QdrantTLS:    Setting[bool]{false, def("recall.qdrant_tls")},
		},
		Voice: VoiceConfig{
			Provider:           str("voice.provider", ""),
			Model:              str("voice.model", ""),
			Voice:              str("voice.voice", ""),
			BaseURL:            str("voice.base_url", ""),
			VAD:                str("voice.vad", "server_vad"),
			VADThreshold:       Setting[float64]{0.2, def("voice.vad_threshold")},
			VADSilence:         Setting[time.Duration]{500 * time.Millisecond, def("voice.vad_silence")},
			VADPrefixPadding:   Setting[time.Duration]{300 * time.Millisecond, def("voice.vad_prefix_padding")},
			TranscriptionModel: str("voice.transcription_model", ""),
		},
		Curator: CuratorConfig{
			Enabled: Setting[bool]{true, def("curator.enabled")},
			Model:   str("curator.model", ""),
			Flush:   Setting[bool]{true, def("curator.flush")},
		},
		Jobs: JobsConfig{Enabled: Setting[bool]{true, def("jobs.enabled")}},
		RateLimit: RateLimitConfig{
			Owner:           Setting[int]{0, def("rate.owner")},
			Collaborator:    Setting[int]{120, def("rate.collaborator")},
			SystemAgent:     Setting[int]{0, def("rate.system_agent")},
			BackgroundAgent: Setting[int]{0, def("rate.background_agent")},
			ExternalAgent:   Setting[int]{60, def("rate.external_agent")},
			Service:         Setting[int]{300, def("rate.service")},
		},
	}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("Load() (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(llm.Settings{Timeout: llm.DefaultTimeout, FirstByteTimeout: llm.DefaultFirstByteTimeout, IdleTimeout: llm.DefaultIdleTimeout, XAIAPI: "responses"}, c.ModelSettings(Preferences{})); diff != "" {
		t.Errorf("ModelSettings() (-want +got):\n%s", diff)
	}
}

// TestFlagDefaultsAreConfigDefaults: a flag's default (shown by -help) is
// the value hearth uses when neither the flag nor anything else sets it.
func TestFlagDefaultsAreConfigDefaults(t *testing.T) {
	c, err, _ := fixture{}.load(t)
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("hearth", flag.ContinueOnError)
	Bind(fs)
	fs.VisitAll(func(fl *flag.Flag) {
		f, ok := fieldByFlag(fl.Name)
		if !ok || fl.DefValue == "" { // "" is a default computed at load
			return
		}
		if got := f.value(c).show(); got != fl.DefValue {
			t.Errorf("-%s: flag default %q, configuration default %q", fl.Name, fl.DefValue, got)
		}
	})
}

// TestBindRegistersTodaysFlags: the flags cmd/hearth has always had, with
// the same defaults and help, and -config.
func TestBindRegistersTodaysFlags(t *testing.T) {
	type flagDef struct{ Name, Default, Usage string }
	want := []flagDef{
		{"addr", "", "listen address (default 127.0.0.1:$MNEMO_HEARTH_PORT or 127.0.0.1:7744)"},
		{"config", "", "config file (default $XDG_CONFIG_HOME/mnemo/hearth.toml; optional)"},
		{"confirm-timeout", "2m0s", "how long a confirm-class tool waits for the owner; silence means no"},
		{"context-budget", "24000", "tokens of conversation the model gets each turn: recent turns, relevant older turns and tool results (shares and an override in preferences.json)"},
		{"gateway", "", "gateway.json listing MCP servers (default $XDG_CONFIG_HOME/mnemo/gateway.json)"},
		{"history", "50", "turns sent to a client when it connects"},
		{"http", "", "also serve the HTTP API (OpenAI-compatible, /engine/chat, /v1/query…) on this address, e.g. 127.0.0.1:7745 (default: none)"},
		{"listen-remote", "false", "allow a non-loopback -addr (requires APP_AUTH_TOKEN)"},
		{"log-backups", "5", "rotated log files kept beside -log-file"},
		{"log-compress", "true", "gzip rotated log files"},
		{"log-file", "", "log to this file, rotated by size, instead of stderr (or $MNEMO_LOG_FILE)"},
		{"log-level", "info", "log level: debug, info, warn, error"},
		{"log-max-size", "10", "MiB at which -log-file rotates"},
		{"max-iterations", "0", "safety bound on model calls in one turn (0: none)"},
		{"root", "", "memory root directory (default $XDG_DATA_HOME/mnemo)"},
		{"tls", "false", "serve the port over TLS with a self-signed certificate made in the config dir; clients pin its fingerprint"},
		{"token-file", "", "auth token file, used when APP_AUTH_TOKEN is unset (default $XDG_CONFIG_HOME/mnemo/token)"},
		{"tool-timeout", "1m0s", "bound on one tool call (a tool may declare its own)"},
		{"vectors", "", "word-vector file of the offline embedder (default $MNEMO_VECTORS or $XDG_CACHE_HOME/mnemo/wink-sg100-100k.bin; `make vectors` builds it)"},
	}
	fs := flag.NewFlagSet("hearth", flag.ContinueOnError)
	Bind(fs)
	var got []flagDef
	fs.VisitAll(func(f *flag.Flag) { got = append(got, flagDef{f.Name, f.DefValue, f.Usage}) })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("flags (-want +got):\n%s", diff)
	}
}

// TestPrecedence: default < file < environment < flag, for a setting all
// four can give; an empty value at any layer is no value.
func TestPrecedence(t *testing.T) {
	file := "[recall]\nvectors = \"/file/v.bin\"\n"
	tests := []struct {
		name string
		fx   fixture
		want Setting[string]
	}{
		{"default", fixture{}, Setting[string]{"/home/me/.cache/mnemo/wink-sg100-100k.bin", def("recall.vectors")}},
		{"file over default", fixture{file: file}, Setting[string]{"/file/v.bin", Source{FromFile, "recall.vectors", "$DIR/mnemo/hearth.toml", 2}}},
		{"env over file", fixture{file: file, env: map[string]string{"MNEMO_VECTORS": "/env/v.bin"}}, Setting[string]{"/env/v.bin", Source{FromEnv, "MNEMO_VECTORS", "", 0}}},
		{"flag over env", fixture{file: file, env: map[string]string{"MNEMO_VECTORS": "/env/v.bin"}, args: []string{"-vectors", "/flag/v.bin"}}, Setting[string]{"/flag/v.bin", Source{FromFlag, "-vectors", "", 0}}},
		{"flag over file", fixture{file: file, args: []string{"-vectors=/flag/v.bin"}}, Setting[string]{"/flag/v.bin", Source{FromFlag, "-vectors", "", 0}}},
		{"an empty flag is no flag", fixture{file: file, env: map[string]string{"MNEMO_VECTORS": "/env/v.bin"}, args: []string{"-vectors", ""}}, Setting[string]{"/env/v.bin", Source{FromEnv, "MNEMO_VECTORS", "", 0}}},
		{"a blank variable is no variable", fixture{file: file, env: map[string]string{"MNEMO_VECTORS": "  "}}, Setting[string]{"/file/v.bin", Source{FromFile, "recall.vectors", "$DIR/mnemo/hearth.toml", 2}}},
		{"an empty file value is no value", fixture{file: "[recall]\nvectors = \"\"\n"}, Setting[string]{"/home/me/.cache/mnemo/wink-sg100-100k.bin", def("recall.vectors")}},
		{"a dotted key", fixture{file: "recall.vectors = \"/file/v.bin\"\n"}, Setting[string]{"/file/v.bin", Source{FromFile, "recall.vectors", "$DIR/mnemo/hearth.toml", 1}}},
		{"an inline table", fixture{file: "recall = {vectors = \"/file/v.bin\"}\n"}, Setting[string]{"/file/v.bin", Source{FromFile, "recall.vectors", "$DIR/mnemo/hearth.toml", 1}}},
		{"a relative path in the file is beside it", fixture{file: "[recall]\nvectors = \"v.bin\"\n"}, Setting[string]{"$DIR/mnemo/v.bin", Source{FromFile, "recall.vectors", "$DIR/mnemo/hearth.toml", 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err, dir := tt.fx.load(t)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			got := c.Recall.Vectors
			got.Value = strings.ReplaceAll(got.Value, dir, "$DIR")
			got.Source.Path = strings.ReplaceAll(got.Source.Path, dir, "$DIR")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("recall.vectors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLogSettings: the log file by file (beside it when relative),
// environment and flag; the rotation settings with their defaults.
func TestLogSettings(t *testing.T) {
	type logs struct {
		File             string
		MaxSize, Backups int
		Compress         bool
	}
	tests := []struct {
		name string
		fx   fixture
		want logs
	}{
		{"default: stderr", fixture{}, logs{"", 10, 5, true}},
		{"file, beside it", fixture{file: "log_file = \"hearth.log\"\nlog_max_size = 1\nlog_backups = 0\nlog_compress = false\n"}, logs{"$DIR/mnemo/hearth.log", 1, 0, false}},
		{"env", fixture{env: map[string]string{"MNEMO_LOG_FILE": "/var/log/h.log"}}, logs{"/var/log/h.log", 10, 5, true}},
		{"flags", fixture{file: "log_file = \"a.log\"\n", args: []string{"-log-file", "/tmp/h.log", "-log-max-size", "50", "-log-backups", "2", "-log-compress=false"}}, logs{"/tmp/h.log", 50, 2, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err, dir := tt.fx.load(t)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			got := logs{strings.ReplaceAll(c.LogFile.Value, dir, "$DIR"), c.LogMaxSize.Value, c.LogBackups.Value, c.LogCompress.Value}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestSources: each value says where it came from, and a flag given with
// its default value still counts as given.
func TestSources(t *testing.T) {
	c, err, dir := fixture{
		file: "history = 70\ncontext_budget = 9000\n[model]\nname = \"file-model\"\n[jobs]\nenabled = false\n",
		env:  map[string]string{"MNEMO_MODEL": "env-model", "XAI_API_KEY": "xk-0123456789", "MNEMO_HEARTH_PORT": "7000", "MNEMO_QDRANT_TLS": "1", "MNEMO_CURATOR_FLUSH": "false"},
		args: []string{"-context-budget", "24000", "-listen-remote"},
	}.load(t)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	file := filepath.Join(dir, "mnemo", FileName)
	got := map[string]any{
		"file":          c.File.Source,
		"history":       c.HistoryTurns,
		"contextBudget": c.ContextBudget,
		"model":         c.Model.Name,
		"xaiKey":        c.Model.XAIKey,
		"addr":          c.Addr,
		"listenRemote":  c.ListenRemote,
		"qdrantTLS":     c.Recall.QdrantTLS,
		"flush":         c.Curator.Flush,
		"jobs":          c.Jobs.Enabled,
	}
	want := map[string]any{
		"file":          def("config"),
		"history":       Setting[int]{70, Source{FromFile, "history", file, 1}},
		"contextBudget": Setting[int]{24000, Source{FromFlag, "-context-budget", "", 0}},
		"model":         Setting[string]{"env-model", Source{FromEnv, "MNEMO_MODEL", "", 0}},
		"xaiKey":        Setting[Secret]{NewSecret("xk-0123456789"), Source{FromEnv, "XAI_API_KEY", "", 0}},
		"addr":          Setting[string]{"127.0.0.1:7000", Source{FromEnv, "MNEMO_HEARTH_PORT", "", 0}},
		"listenRemote":  Setting[bool]{true, Source{FromFlag, "-listen-remote", "", 0}},
		"qdrantTLS":     Setting[bool]{true, Source{FromEnv, "MNEMO_QDRANT_TLS", "", 0}},
		"flush":         Setting[bool]{false, Source{FromEnv, "MNEMO_CURATOR_FLUSH", "", 0}},
		"jobs":          Setting[bool]{false, Source{FromFile, "jobs.enabled", file, 6}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}
	if !c.FileFound {
		t.Error("FileFound = false")
	}
	for src, want := range map[Source]string{
		def("x"):                                   "default",
		{Origin: FromFile, Path: "/a/b.toml"}:      "file /a/b.toml",
		{Origin: FromEnv, Name: "XAI_API_KEY"}:     "env XAI_API_KEY",
		{Origin: FromFlag, Name: "-addr", Line: 0}: "flag -addr",
	} {
		if got := src.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", src, got, want)
		}
	}
}

// TestLoadErrors: every problem is reported at once, each naming the
// setting, its value and where it came from.
func TestLoadErrors(t *testing.T) {
	const token = "0123456789abcdef"
	tests := []struct {
		name string
		fx   fixture
		want []string
	}{
		{
			name: "out of range, from each layer",
			fx: fixture{
				file: "history = 0\n\n[model]\ntimeout = \"soon\"\n",
				env:  map[string]string{"MNEMO_EMBED_DIM": "lots", "MNEMO_HEARTH_PORT": "99999"},
				args: []string{"-context-budget", "10", "-tool-timeout", "-1s", "-log-level", "loud", "-max-iterations", "-1"},
			},
			want: []string{
				`model.timeout "soon" (file $DIR/mnemo/hearth.toml:4): want a Go duration such as 90s or 10m`,
				`MNEMO_HEARTH_PORT 99999 (env): not a port number`,
				`MNEMO_EMBED_DIM lots (env): want a whole number`,
				`-log-level loud (flag): want debug, info, warn or error`,
				`history 0 (file $DIR/mnemo/hearth.toml:1): must be at least 1`,
				`-tool-timeout -1s (flag): must be positive`,
				`-max-iterations -1 (flag): must not be negative (0: no bound)`,
				`-context-budget 10 (flag): must be between 1000 and 2000000`,
			},
		},
		{
			name: "log file bounds",
			fx:   fixture{file: "log_max_size = 0\n", args: []string{"-log-backups", "-1"}},
			want: []string{
				`log_max_size 0 (file $DIR/mnemo/hearth.toml:1): must be at least 1 (MiB)`,
				`-log-backups -1 (flag): must not be negative`,
			},
		},
		{
			name: "model watchdog timeouts",
			fx: fixture{
				file: "[model]\ntimeout = \"30s\"\nfirst_byte_timeout = \"45s\"\n",
				env:  map[string]string{"MNEMO_MODEL_IDLE_TIMEOUT": "0s"},
			},
			want: []string{
				`MNEMO_MODEL_IDLE_TIMEOUT 0s (env): must be positive`,
				`model.first_byte_timeout 45s (file $DIR/mnemo/hearth.toml:3): must not exceed model.timeout 30s (file $DIR/mnemo/hearth.toml)`,
			},
		},
		{
			name: "unknown keys, with their lines",
			fx:   fixture{file: "histroy = 5\n[model]\nprovder = \"xai\"\n[video]\nrate = 1\n"},
			want: []string{
				`histroy (file $DIR/mnemo/hearth.toml:1): unknown setting`,
				`model.provder (file $DIR/mnemo/hearth.toml:3): unknown setting`,
				`video (file $DIR/mnemo/hearth.toml:4): unknown setting`,
			},
		},
		{
			name: "unknown keys in dotted form and sub-tables",
			fx:   fixture{file: "model.bogus = 1\nvoice.rate = 1\n[recall.extra]\nx = 1\n[deep.er]\ny = 2\n[model]\ninline = {a = 1, b = 2}\nz = {}\n"},
			want: []string{
				`model.bogus (file $DIR/mnemo/hearth.toml:1): unknown setting`,
				`voice.rate (file $DIR/mnemo/hearth.toml:2): unknown setting`,
				`recall.extra (file $DIR/mnemo/hearth.toml:3): unknown setting`,
				`deep (file $DIR/mnemo/hearth.toml:5): unknown setting`,
				`model.inline (file $DIR/mnemo/hearth.toml:8): unknown setting`,
				`model.z (file $DIR/mnemo/hearth.toml:9): unknown setting`,
			},
		},
		{
			name: "secrets are refused in the file",
			fx:   fixture{file: "[model]\nxai_api_key = \"xai-SECRET\"\n[recall]\nqdrant_api_key = \"q-SECRET\"\n"},
			want: []string{
				`model.xai_api_key (file $DIR/mnemo/hearth.toml:2): secrets are not read from the config file: set XAI_API_KEY in the environment`,
				`recall.qdrant_api_key (file $DIR/mnemo/hearth.toml:4): secrets are not read from the config file: set MNEMO_QDRANT_API_KEY in the environment`,
			},
		},
		{
			name: "an unknown key that looks like a secret",
			fx:   fixture{file: "app_auth_token = \"SECRET-0123456789\"\n"},
			want: []string{`app_auth_token (file $DIR/mnemo/hearth.toml:1): unknown setting; secrets are not read from the config file: set them in the environment`},
		},
		{
			name: "wrong types",
			fx:   fixture{file: "history = \"lots\"\nlisten_remote = \"yes\"\ntool_timeout = 60\nmodel = 3\n[recall]\nembed_dim = 1.5\n"},
			want: []string{
				`history "lots" (file $DIR/mnemo/hearth.toml:1): want a whole number`,
				`listen_remote "yes" (file $DIR/mnemo/hearth.toml:2): want true or false`,
				`tool_timeout 60 (file $DIR/mnemo/hearth.toml:3): want a Go duration such as 90s or 10m, as a string`,
				`model 3 (file $DIR/mnemo/hearth.toml:4): want a table [model]`,
				`recall.embed_dim 1.5 (file $DIR/mnemo/hearth.toml:6): want a whole number`,
			},
		},
		{
			name: "a setting used as a table",
			fx:   fixture{file: "[root]\nx = 1\n"},
			want: []string{`root (a table) (file $DIR/mnemo/hearth.toml:1): want a string`},
		},
		{
			name: "not TOML",
			fx:   fixture{file: "history = = 5\n"},
			want: []string{`config file $DIR/mnemo/hearth.toml:1: expected value but found '=' instead`},
		},
		{
			name: "a missing -config file",
			fx:   fixture{args: []string{"-config", "$DIR/nope.toml"}},
			want: []string{`-config $DIR/nope.toml (flag): cannot read the config file: no such file or directory`},
		},
		{
			name: "a network address without -listen-remote",
			fx:   fixture{args: []string{"-addr", "0.0.0.0:7744"}, env: map[string]string{"APP_AUTH_TOKEN": token}},
			want: []string{`-addr 0.0.0.0:7744 (flag): refusing to listen on a non-loopback address: pass -listen-remote (or set listen_remote = true in the config file) to serve the network`},
		},
		{
			name: "all interfaces without a token",
			fx:   fixture{file: "addr = \":7744\"\nlisten_remote = true\n"},
			want: []string{`addr :7744 (file $DIR/mnemo/hearth.toml:1): refusing to listen on the network without a token: set APP_AUTH_TOKEN (at least 16 characters)`},
		},
		{
			name: "a network address with a short token",
			fx:   fixture{args: []string{"-addr", "192.168.1.2:7744", "-listen-remote"}, env: map[string]string{"APP_AUTH_TOKEN": "short-SECRET"}},
			want: []string{`-addr 192.168.1.2:7744 (flag): refusing to listen on the network with a short token: APP_AUTH_TOKEN must have at least 16 characters`},
		},
		{
			name: "not host:port",
			fx:   fixture{args: []string{"-addr", "localhost"}},
			want: []string{`-addr localhost (flag): want host:port`},
		},
		{
			name: "model settings",
			fx: fixture{
				file: "[model]\nxai_api = \"grpc\"\nxai_server_tools = [\"file_search\"]\nopenai_base_url = \"ftp://user:SECRET@host/v1\"\n",
				env:  map[string]string{"MNEMO_PROVIDER": "Gemini"},
			},
			want: []string{
				`MNEMO_PROVIDER gemini (env): not supported: use "xai", "anthropic" or "openai"`,
				`model.openai_base_url ftp://user:xxxxx@host/v1 (file $DIR/mnemo/hearth.toml:4): the scheme must be http or https`,
				`model.xai_api grpc (file $DIR/mnemo/hearth.toml:2): must be "responses" or "chat"`,
				`model.xai_server_tools file_search (file $DIR/mnemo/hearth.toml:3): unknown tool "file_search": use web_search, x_search or code_interpreter`,
			},
		},
		{
			name: "server tools need the Responses API",
			fx:   fixture{env: map[string]string{"MNEMO_XAI_API": "chat", "MNEMO_XAI_SERVER_TOOLS": "x_search"}},
			want: []string{`MNEMO_XAI_SERVER_TOOLS x_search (env): server tools need the Responses API, but model.xai_api is "chat" (env MNEMO_XAI_API)`},
		},
		{
			name: "a provider without its key",
			fx:   fixture{file: "[model]\nprovider = \"anthropic\"\n", env: map[string]string{"XAI_API_KEY": "xk"}},
			want: []string{`model.provider anthropic (file $DIR/mnemo/hearth.toml:2): MNEMO_PROVIDER=anthropic but ANTHROPIC_API_KEY is not set`},
		},
		{
			name: "a base URL without its key",
			fx:   fixture{env: map[string]string{"XAI_BASE_URL": "https://api.x.ai/v1"}},
			want: []string{`model provider: XAI_BASE_URL is set but XAI_API_KEY is not: set XAI_API_KEY to use xAI`},
		},
		{
			name: "an embedder without what it needs",
			fx:   fixture{env: map[string]string{"MNEMO_EMBEDDER": "OpenAI", "MNEMO_EMBED_BASE_URL": "localhost:1234"}},
			want: []string{
				`MNEMO_EMBEDDER openai (env): needs recall.embed_dim (MNEMO_EMBED_DIM): the model's vector size, e.g. 1024 for Qwen3-Embedding-0.6B`,
				`MNEMO_EMBEDDER openai (env): needs recall.embed_model (MNEMO_EMBED_MODEL)`,
				`MNEMO_EMBED_BASE_URL localhost:1234 (env): the scheme must be http or https`,
			},
		},
		{
			name: "an unknown embedder",
			fx:   fixture{file: "[recall]\nembedder = \"bert\"\nembed_dim = -1\n"},
			want: []string{
				`recall.embedder bert (file $DIR/mnemo/hearth.toml:2): use auto, wordvec, openai, ollama or none`,
				`recall.embed_dim -1 (file $DIR/mnemo/hearth.toml:3): must not be negative`,
			},
		},
		{
			name: "a negative rate limit",
			fx:   fixture{file: "[rate]\nservice = -5\n"},
			want: []string{
				`rate.service -5 (file $DIR/mnemo/hearth.toml:2): must not be negative (requests a minute; 0 is no limit)`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err, dir := tt.fx.load(t)
			if c == nil {
				t.Error("Load returned no Config with its error")
			}
			if diff := cmp.Diff(tt.want, messages(err, dir)); diff != "" {
				t.Errorf("Load() errors (-want +got):\n%s", diff)
			}
			if err != nil && strings.Contains(err.Error(), "SECRET") {
				t.Errorf("error %q shows a secret", err)
			}
		})
	}
}

// TestLoadValid: configurations that must load.
func TestLoadValid(t *testing.T) {
	tests := []struct {
		name string
		fx   fixture
	}{
		{"no provider at all", fixture{}},
		{"a network address with a token", fixture{args: []string{"-addr", "0.0.0.0:7744", "-listen-remote"}, env: map[string]string{"APP_AUTH_TOKEN": " 0123456789abcdef "}}},
		{"localhost", fixture{args: []string{"-addr", "localhost:1"}}},
		{"IPv6 loopback", fixture{args: []string{"-addr", "[::1]:7744"}}},
		{"ollama for the model", fixture{env: map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1", "MNEMO_MODEL": "llama3.2"}}},
		{"the missing default file", fixture{args: []string{}}},
		{"xAI options ignored by another provider are still checked, and fine", fixture{env: map[string]string{"ANTHROPIC_API_KEY": "ak", "MNEMO_XAI_API": "chat"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err, _ := tt.fx.load(t); err != nil {
				t.Errorf("Load: %v", err)
			}
		})
	}
}

// TestExampleFile: testdata/example.toml, the package doc's example, loads
// and sets every setting the file may hold.
func TestExampleFile(t *testing.T) {
	c, err, _ := fixture{args: []string{"-config", "testdata/example.toml"}, env: map[string]string{"XAI_API_KEY": "xk"}}.load(t)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	for _, f := range fields {
		src := f.value(c).source()
		if f.secret {
			continue
		}
		if want := (Source{FromFile, f.key, "testdata/example.toml", src.Line}); src != want || src.Line == 0 {
			t.Errorf("%s comes from %+v, want the example file", f.key, src)
		}
	}
	if got, want := c.TokenFile.Value, filepath.Join("testdata", "token"); got != want {
		t.Errorf("token_file = %q, want %q (beside the file)", got, want)
	}
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("testdata/example.toml")
	if err != nil {
		t.Fatal(err)
	}
	// The doc shows the file from its first setting on.
	body := string(example[strings.Index(string(example), "addr ="):])
	var inDoc strings.Builder
	for line := range strings.Lines(body) {
		if line == "\n" {
			inDoc.WriteString("//\n")
			continue
		}
		inDoc.WriteString("//\t" + line)
	}
	if !strings.Contains(string(doc), inDoc.String()) {
		t.Errorf("the package doc's example is not testdata/example.toml; it should read:\n%s", inDoc.String())
	}
}

// TestDerivedEmbedDefaults: the embedding endpoint's key and base URL
// default to the OpenAI provider's, as they always have.
func TestDerivedEmbedDefaults(t *testing.T) {
	embed := map[string]string{"MNEMO_EMBED_DIM": "8", "MNEMO_EMBED_MODEL": "m"}
	with := func(kv ...string) map[string]string {
		env := map[string]string{}
		for k, v := range embed {
			env[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return env
	}
	tests := []struct {
		name    string
		env     map[string]string
		wantURL Setting[string]
		wantKey Source
	}{
		{"openai: the provider's server and key", with("MNEMO_EMBEDDER", "openai", "OPENAI_BASE_URL", "http://gpu:8000/v1", "OPENAI_API_KEY", "ok"),
			Setting[string]{"http://gpu:8000/v1", Source{FromEnv, "OPENAI_BASE_URL", "", 0}}, Source{FromEnv, "OPENAI_API_KEY", "", 0}},
		{"openai: OpenAI's", with("MNEMO_EMBEDDER", "openai"),
			Setting[string]{"https://api.openai.com/v1", def("recall.embed_base_url")}, def("recall.embed_api_key")},
		{"ollama: local", with("MNEMO_EMBEDDER", "ollama", "OPENAI_BASE_URL", "http://gpu:8000/v1"),
			Setting[string]{"http://localhost:11434", def("recall.embed_base_url")}, def("recall.embed_api_key")},
		{"its own", with("MNEMO_EMBEDDER", "openai", "MNEMO_EMBED_BASE_URL", "http://e:1", "MNEMO_EMBED_API_KEY", "ek", "OPENAI_API_KEY", "ok"),
			Setting[string]{"http://e:1", Source{FromEnv, "MNEMO_EMBED_BASE_URL", "", 0}}, Source{FromEnv, "MNEMO_EMBED_API_KEY", "", 0}},
		{"none for the word vectors", with("OPENAI_API_KEY", "ok"),
			Setting[string]{"", def("recall.embed_base_url")}, def("recall.embed_api_key")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err, _ := fixture{env: tt.env}.load(t)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if diff := cmp.Diff(tt.wantURL, c.Recall.EmbedBaseURL); diff != "" {
				t.Errorf("embed_base_url (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantKey, c.Recall.EmbedKey.Source); diff != "" {
				t.Errorf("embed_api_key source (-want +got):\n%s", diff)
			}
		})
	}
}

// TestModelSettings: the owner's provider and model preferences override
// the configuration's, and the result resolves as the environment would.
func TestModelSettings(t *testing.T) {
	c, err, _ := fixture{
		file: "[model]\nprovider = \"xai\"\ntimeout = \"90s\"\nfirst_byte_timeout = \"20s\"\nxai_server_tools = [\"x_search\"]\n",
		env:  map[string]string{"XAI_API_KEY": "xk", "ANTHROPIC_API_KEY": "ak", "MNEMO_MODEL": "grok-4.5", "MNEMO_MODEL_IDLE_TIMEOUT": "30s"},
	}.load(t)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	tests := []struct {
		name  string
		prefs Preferences
		want  llm.Config
	}{
		{"configured", Preferences{}, llm.Config{Provider: "xai", Model: "grok-4.5", BaseURL: llm.DefaultXAIBaseURL, APIKey: "xk", Timeout: 90 * time.Second, FirstByteTimeout: 20 * time.Second, IdleTimeout: 30 * time.Second, API: "responses", ServerTools: []string{"x_search"}}},
		{"another model", Preferences{Model: "grok-5"}, llm.Config{Provider: "xai", Model: "grok-5", BaseURL: llm.DefaultXAIBaseURL, APIKey: "xk", Timeout: 90 * time.Second, FirstByteTimeout: 20 * time.Second, IdleTimeout: 30 * time.Second, API: "responses", ServerTools: []string{"x_search"}}},
		{"another provider", Preferences{Provider: "anthropic", Model: "claude-x"}, llm.Config{Provider: "anthropic", Model: "claude-x", BaseURL: llm.DefaultAnthropicBaseURL, APIKey: "ak", Timeout: 90 * time.Second, FirstByteTimeout: 20 * time.Second, IdleTimeout: 30 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.ModelSettings(tt.prefs).Resolve()
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	_, err = c.ModelSettings(Preferences{Provider: "openai"}).Resolve()
	if err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("openai preference without its key: err = %v", err)
	}
	if errors.Is(err, llm.ErrNoProvider) {
		t.Errorf("err = %v, want a misconfiguration", err)
	}
}

func TestBudget(t *testing.T) {
	c, err, _ := fixture{args: []string{"-context-budget", "8000"}}.load(t)
	if err != nil {
		t.Fatal(err)
	}
	b := c.Budget()
	if b.Tokens != 8000 || b.Shares != hearth.DefaultContextBudget().Shares {
		t.Errorf("Budget() = %+v", b)
	}
}
