package config

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/auth"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/ipc"
)

// FileName is the config file's name in the user's config dir, under
// mnemo/.
const FileName = "hearth.toml"

// LoadOptions are what Load reads.
type LoadOptions struct {
	// Flags are the parsed flags Bind registered; nil means none.
	Flags *Flags
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// ConfigDir, DataDir and CacheDir stand for the user's directories,
	// for tests: "" means os.UserConfigDir(), $XDG_DATA_HOME or
	// ~/.local/share (as memory.DefaultDir), and os.UserCacheDir(). The
	// defaults under them: the config file, the token file and gateway.json
	// in ConfigDir/mnemo, the memory root DataDir/mnemo, the word vectors
	// in CacheDir/mnemo.
	ConfigDir, DataDir, CacheDir string
}

// Load reads the configuration: the defaults, overridden by the config
// file, overridden by the environment, overridden by the flags given
// explicitly. It validates the result and reports every problem at once,
// each naming the setting and where its value came from, e.g.
//
//	-context-budget 10 (flag): must be between 1000 and 2000000
//
// When the error is not nil the Config is still returned, holding what
// could be read, for `hearth config` to show; do not run with it.
func Load(o LoadOptions) (*Config, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	l := &loader{o: o, missing: make(map[string]error)}
	c := l.defaults()

	var errs []error
	errs = append(errs, l.file(c)...)
	errs = append(errs, l.env(c)...)
	errs = append(errs, l.flags(c)...)
	derive(c)
	errs = append(errs, l.validate(c)...)
	return c, errors.Join(errs...)
}

type loader struct {
	o LoadOptions
	// missing are the settings whose default is unknown, with why: the
	// user's directory could not be found.
	missing map[string]error
}

func (l *loader) configDir() (string, error) {
	if l.o.ConfigDir != "" {
		return l.o.ConfigDir, nil
	}
	return os.UserConfigDir()
}

func (l *loader) cacheDir() (string, error) {
	if l.o.CacheDir != "" {
		return l.o.CacheDir, nil
	}
	return os.UserCacheDir()
}

// dataDir is memory.DefaultDir's parent.
func (l *loader) dataDir() (string, error) {
	if l.o.DataDir != "" {
		return l.o.DataDir, nil
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".local", "share"), nil
}

// defaults is the built-in configuration, as hearth has always had it.
func (l *loader) defaults() *Config {
	def := func(key string) Source { return Source{Origin: FromDefault, Name: key} }
	str := func(key, v string) Setting[string] { return Setting[string]{v, def(key)} }
	under := func(key string, dir func() (string, error), elem ...string) Setting[string] {
		d, err := dir()
		if err != nil {
			l.missing[key] = err
			return str(key, "")
		}
		return str(key, filepath.Join(append([]string{d, "mnemo"}, elem...)...))
	}
	c := &Config{
		File:           under("config", l.configDir, FileName),
		Addr:           str("addr", net.JoinHostPort("127.0.0.1", strconv.Itoa(ipc.DefaultPort))),
		ListenRemote:   Setting[bool]{false, def("listen_remote")},
		HTTPAddr:       str("http", ""),
		TLS:            Setting[bool]{false, def("tls")},
		Root:           under("root", l.dataDir),
		TokenFile:      under("token_file", l.configDir, "token"),
		Gateway:        under("gateway", l.configDir, "gateway.json"),
		HistoryTurns:   Setting[int]{50, def("history")},
		ToolTimeout:    Setting[time.Duration]{60 * time.Second, def("tool_timeout")},
		ConfirmTimeout: Setting[time.Duration]{2 * time.Minute, def("confirm_timeout")},
		MaxIterations:  Setting[int]{0, def("max_iterations")},
		ContextBudget:  Setting[int]{hearth.DefaultContextTokens, def("context_budget")},
		LogLevel:       Setting[slog.Level]{slog.LevelInfo, def("log_level")},
		LogFile:        str("log_file", ""),
		LogMaxSize:     Setting[int]{DefaultLogMaxSize, def("log_max_size")},
		LogBackups:     Setting[int]{DefaultLogBackups, def("log_backups")},
		LogCompress:    Setting[bool]{true, def("log_compress")},
		AuthToken:      Setting[Secret]{Source: def("auth_token")},
		Model: ModelConfig{
			Provider:         str("model.provider", ""),
			Name:             str("model.name", ""),
			Timeout:          Setting[time.Duration]{llm.DefaultTimeout, def("model.timeout")},
			FirstByteTimeout: Setting[time.Duration]{llm.DefaultFirstByteTimeout, def("model.first_byte_timeout")},
			IdleTimeout:      Setting[time.Duration]{llm.DefaultIdleTimeout, def("model.idle_timeout")},
			XAIKey:           Setting[Secret]{Source: def("model.xai_api_key")},
			XAIBaseURL:       str("model.xai_base_url", ""),
			XAIAPI:           str("model.xai_api", llm.APIResponses),
			XAIServerTools:   Setting[[]string]{Source: def("model.xai_server_tools")},
			AnthropicKey:     Setting[Secret]{Source: def("model.anthropic_api_key")},
			AnthropicBaseURL: str("model.anthropic_base_url", ""),
			OpenAIKey:        Setting[Secret]{Source: def("model.openai_api_key")},
			OpenAIBaseURL:    str("model.openai_base_url", ""),
		},
		Recall: RecallConfig{
			Embedder:     str("recall.embedder", EmbedderAuto),
			Vectors:      under("recall.vectors", l.cacheDir, "wink-sg100-100k.bin"),
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
			VAD:                str("voice.vad", VADServer),
			VADThreshold:       Setting[float64]{DefaultVADThreshold, def("voice.vad_threshold")},
			VADSilence:         Setting[time.Duration]{DefaultVADSilence, def("voice.vad_silence")},
			VADPrefixPadding:   Setting[time.Duration]{DefaultVADPrefixPadding, def("voice.vad_prefix_padding")},
			TranscriptionModel: str("voice.transcription_model", ""),
		},
		Curator: CuratorConfig{
			Enabled: Setting[bool]{true, def("curator.enabled")},
			Model:   str("curator.model", ""),
			Flush:   Setting[bool]{true, def("curator.flush")},
		},
		Jobs: JobsConfig{
			Enabled: Setting[bool]{true, def("jobs.enabled")},
		},
		RateLimit: RateLimitConfig{
			Owner:           Setting[int]{0, def("rate.owner")},
			Collaborator:    Setting[int]{auth.DefaultRateLimits()[auth.ActorCollaborator], def("rate.collaborator")},
			SystemAgent:     Setting[int]{0, def("rate.system_agent")},
			BackgroundAgent: Setting[int]{0, def("rate.background_agent")},
			ExternalAgent:   Setting[int]{auth.DefaultRateLimits()[auth.ActorExternalAgent], def("rate.external_agent")},
			Service:         Setting[int]{auth.DefaultRateLimits()[auth.ActorService], def("rate.service")},
		},
	}
	return c
}

// file applies the config file: -config's, else the default one if it
// exists.
func (l *loader) file(c *Config) []error {
	explicit := false
	l.o.Flags.visit(func(name, v string) {
		if name == "config" && v != "" {
			c.File = Setting[string]{v, Source{Origin: FromFlag, Name: "-config"}}
			explicit = true
		}
	})
	if c.File.Value == "" {
		return nil // no config dir: no default file
	}
	path := c.File.Value
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !explicit:
		return nil
	case err != nil:
		return []error{problem(c.File.Source, path, fmt.Sprintf("cannot read the config file: %v", unwrapPath(err)))}
	}
	c.FileFound = true
	return decodeFile(c, path, data)
}

// unwrapPath drops the path a PathError repeats.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// decodeFile applies the TOML document data, read from path, to c. Its
// errors come in the order of the lines they are about.
func decodeFile(c *Config, path string, data []byte) []error {
	var top map[string]toml.Primitive
	md, err := toml.Decode(string(data), &top)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return []error{fmt.Errorf("config file %s:%d: %s", path, pe.Position.Line, pe.Message)}
		}
		return []error{fmt.Errorf("config file %s: %w", path, err)}
	}
	d := &fileDecoder{c: c, md: &md, path: path}
	d.table(nil, top)
	slices.SortFunc(d.errs, func(a, b lineError) int { return cmp.Or(cmp.Compare(a.line, b.line), cmp.Compare(a.key, b.key)) })
	errs := make([]error, len(d.errs))
	for i, e := range d.errs {
		errs[i] = e.err
	}
	return errs
}

// fileDecoder applies a config file's keys to a Config.
type fileDecoder struct {
	c    *Config
	md   *toml.MetaData
	path string
	errs []lineError
}

type lineError struct {
	line int
	key  string
	err  error
}

// table applies the keys of the table at prefix (nil: the document).
func (d *fileDecoder) table(prefix toml.Key, keys map[string]toml.Primitive) {
	for name, p := range keys {
		d.key(append(slices.Clip(prefix), name), p)
	}
}

// key applies one key: a table of settings, a setting, or an error.
func (d *fileDecoder) key(k toml.Key, p toml.Primitive) {
	v, line := capture(d.md, p)
	src := Source{Origin: FromFile, Name: k.String(), Path: d.path, Line: line}
	fail := func(err error) { d.errs = append(d.errs, lineError{src.Line, src.Name, err}) }
	if len(k) == 1 && tables[k[0]] {
		var m map[string]toml.Primitive
		if _, isTable := v.(map[string]any); !isTable || d.md.PrimitiveDecode(p, &m) != nil {
			fail(problem(src, tomlText(v), "want a table ["+k[0]+"]"))
			return
		}
		d.table(k, m)
		return
	}
	f, ok := fieldByKey(k.String())
	switch {
	case !ok:
		if line == 0 { // a table only implied by dotted keys: where they are
			line = d.firstLine(p)
			src.Line = line
		}
		msg := "unknown setting"
		if looksSecret(k[len(k)-1]) {
			msg += "; secrets are not read from the config file: set them in the environment"
		}
		fail(fmt.Errorf("%s (%s): %s", k, src.where(), msg))
	case f.secret:
		fail(fmt.Errorf("%s (%s): secrets are not read from the config file: set %s in the environment", k, src.where(), f.env))
	default:
		if s, ok := v.(string); ok && strings.TrimSpace(s) == "" {
			return // empty is left out
		}
		if err := f.value(d.c).decode(v, src); err != nil {
			fail(problem(src, tomlText(v), err.Error()))
		}
	}
}

// firstLine is the first line of a table's keys; 0 if p is no table.
func (d *fileDecoder) firstLine(p toml.Primitive) int {
	var m map[string]toml.Primitive
	if d.md.PrimitiveDecode(p, &m) != nil {
		return 0
	}
	first := 0
	for _, q := range m {
		_, line := capture(d.md, q)
		if line == 0 {
			line = d.firstLine(q)
		}
		if line > 0 && (first == 0 || line < first) {
			first = line
		}
	}
	return first
}

// errCapture stops the decoding capture asks for.
var errCapture = errors.New("captured")

type captured struct{ v any }

func (c *captured) UnmarshalTOML(v any) error {
	c.v = v
	return errCapture
}

// capture returns p's value and line. The toml package keeps keys'
// positions to itself, but puts them in the error an Unmarshaler returns.
func capture(md *toml.MetaData, p toml.Primitive) (any, int) {
	var c captured
	var pe toml.ParseError
	if err := md.PrimitiveDecode(p, &c); errors.As(err, &pe) {
		return c.v, pe.Position.Line
	}
	return c.v, 0
}

// tomlText shows a file value in an error.
func tomlText(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case map[string]any:
		return "(a table)"
	case []map[string]any:
		return "(an array of tables)"
	}
	return fmt.Sprint(v)
}

// looksSecret reports whether a file key names what is likely a secret.
func looksSecret(key string) bool {
	key = strings.ToLower(key)
	for _, s := range []string{"key", "token", "secret", "password"} {
		if strings.Contains(key, s) {
			return true
		}
	}
	return false
}

// env applies the environment: a variable set to something other than
// blanks overrides the file.
func (l *loader) env(c *Config) []error {
	var errs []error
	for _, f := range fields {
		if f.env == "" {
			continue
		}
		raw := strings.TrimSpace(l.o.Getenv(f.env))
		if raw == "" {
			continue
		}
		src := Source{Origin: FromEnv, Name: f.env}
		shown := raw
		if f.secret {
			shown = "(set)"
		}
		text := raw
		if f.envText != nil {
			var err error
			if text, err = f.envText(raw); err != nil {
				errs = append(errs, problem(src, shown, err.Error()))
				continue
			}
		}
		if err := f.value(c).parse(text, src); err != nil {
			errs = append(errs, problem(src, shown, err.Error()))
		}
	}
	return errs
}

// flags applies the flags given explicitly. An empty string flag is left
// out, as it always meant the default.
func (l *loader) flags(c *Config) []error {
	var errs []error
	l.o.Flags.visit(func(name, raw string) {
		f, ok := fieldByFlag(name)
		if !ok || strings.TrimSpace(raw) == "" {
			return
		}
		src := Source{Origin: FromFlag, Name: "-" + name}
		if err := f.value(c).parse(raw, src); err != nil {
			errs = append(errs, problem(src, raw, err.Error()))
		}
	})
	return errs
}

// ollamaBaseURL is the ollama embedder's default server.
const ollamaBaseURL = "http://localhost:11434"

// derive fills the settings whose default is another setting: the
// embedding endpoint's key and base URL default to the OpenAI model
// provider's, as they always have.
func derive(c *Config) {
	r := &c.Recall
	switch r.Embedder.Value {
	case EmbedderOpenAI, EmbedderOllama:
	default:
		return
	}
	if !r.EmbedKey.Value.IsSet() && c.Model.OpenAIKey.Value.IsSet() {
		r.EmbedKey = c.Model.OpenAIKey
	}
	if r.EmbedBaseURL.Value != "" {
		return
	}
	switch {
	case r.Embedder.Value == EmbedderOllama:
		r.EmbedBaseURL.Value = ollamaBaseURL
	case c.Model.OpenAIBaseURL.Value != "":
		r.EmbedBaseURL = c.Model.OpenAIBaseURL
	default:
		r.EmbedBaseURL.Value = llm.DefaultOpenAIBaseURL
	}
}
