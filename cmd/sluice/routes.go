package main

// The configuration file (SLUICE_CONFIG, -config): several upstreams and
// the models they serve (issue 15). Without a file, the SLUICE_UPSTREAM
// settings are one upstream, as before. The file holds only what is per
// upstream and per model; every other setting (server, cache, Redis, ...)
// still comes from the environment, and a field an upstream leaves out
// takes the SLUICE_* setting of the same meaning.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/pipeline"
	"github.com/sluice-dev/sluice/stream/upstream"
)

// maxConfigBytes bounds the configuration file read.
const maxConfigBytes = 1 << 20

// maxUpstreams and maxModels bound a configuration file's upstreams and
// models: each upstream has its budget, breaker and metric series, each
// model a line of GET /v1/models.
const (
	maxUpstreams = 256
	maxModels    = 1024
)

// maxModelName bounds a model name of the file, in bytes.
const maxModelName = 128

// fileConfig is the configuration file as written.
type fileConfig struct {
	// DefaultModel is the model of a request that names none. default:
	// SLUICE_MODEL when it is set, else the only model
	DefaultModel string                  `yaml:"default_model"`
	Upstreams    []fileUpstream          `yaml:"upstreams"`
	Models       map[string][]fileTarget `yaml:"models"`
}

// fileUpstream is one upstream of the file. A nil field takes the
// SLUICE_* setting of the same meaning.
type fileUpstream struct {
	Name           string         `yaml:"name"`
	Kind           string         `yaml:"kind"` // openai or sim
	BaseURL        string         `yaml:"base_url"`
	APIKeyEnv      string         `yaml:"api_key_env"`
	Budget         *int           `yaml:"budget"`
	AcquireTimeout *time.Duration `yaml:"acquire_timeout"`
	Queue          *int           `yaml:"queue"`
	ConnectTimeout *time.Duration `yaml:"connect_timeout"`
	TTFTTimeout    *time.Duration `yaml:"ttft_timeout"`
	IdleTimeout    *time.Duration `yaml:"idle_timeout"`
	Breaker        *fileBreaker   `yaml:"breaker"`
	Adaptive       *fileAdaptive  `yaml:"adaptive"`
}

// fileBreaker is an upstream's circuit breaker (SLUICE_BREAKER_*).
type fileBreaker struct {
	MinCalls    *int           `yaml:"min_calls"`
	FailureRate *float64       `yaml:"failure_rate"`
	Window      *time.Duration `yaml:"window"`
	CoolDown    *time.Duration `yaml:"cooldown"`
}

// fileAdaptive turns on an upstream's adaptive budget
// (SLUICE_BUDGET_ADAPTIVE and its settings): the limit moves between min
// and max from the upstream's time to first token and 429/503 answers,
// starting at budget.
type fileAdaptive struct {
	Min      *int           `yaml:"min"`
	Max      *int           `yaml:"max"`
	Interval *time.Duration `yaml:"interval"`
}

// fileTarget is one entry of a model's list: an upstream's name, or
// {upstream: NAME, model: NAME-THERE}.
type fileTarget struct {
	Upstream string
	Model    string
	line     int
}

// UnmarshalYAML reads either form of a target, refusing unknown keys
// (the decoder's KnownFields does not reach custom unmarshalers).
func (t *fileTarget) UnmarshalYAML(n *yaml.Node) error {
	t.line = n.Line
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Decode(&t.Upstream)
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			var dst *string
			switch k.Value {
			case "upstream":
				dst = &t.Upstream
			case "model":
				dst = &t.Model
			default:
				return fmt.Errorf("line %d: field %s not found in a model's upstream (upstream, model)", k.Line, k.Value)
			}
			if err := v.Decode(dst); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("line %d: a model's upstream is a name or {upstream: NAME, model: NAME}", n.Line)
}

// routesConfig is a checked configuration file, ready to build the
// orchestrator's routes.
type routesConfig struct {
	Path         string
	DefaultModel string
	Upstreams    []routeUpstream
	Models       map[string][]orchestrator.Target
}

// routeUpstream is one checked upstream, its unset fields filled from the
// settings.
type routeUpstream struct {
	Name, Kind, BaseURL, APIKeyEnv string
	apiKey                         string // never printed
	Budget, Queue                  int
	AcquireTimeout                 time.Duration
	ConnectTimeout                 time.Duration
	TTFTTimeout, IdleTimeout       time.Duration
	BreakerMinCalls                int
	BreakerFailureRate             float64
	BreakerWindow, BreakerCoolDown time.Duration
	Adaptive                       pipeline.AdaptiveConfig // Enabled when the file has adaptive:
}

// configErrors is every problem of a file, one a line.
type configErrors []string

func (e configErrors) Error() string { return strings.Join(e, "\n") }

var (
	upstreamName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
	envName      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,255}$`)
)

// loadRoutes reads and checks the configuration file at path. s gives
// the defaults of the fields left out (and SLUICE_MODEL), getenv the keys
// named by api_key_env. Every error names the file, the line and the
// field.
func loadRoutes(path string, s *settings, getenv func(string) string) (*routesConfig, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	if len(data) > maxConfigBytes {
		return nil, fmt.Errorf("config file %s: larger than %d bytes", path, maxConfigBytes)
	}
	return parseRoutes(path, data, s, getenv)
}

// parseRoutes is loadRoutes of data read from path.
func parseRoutes(path string, data []byte, s *settings, getenv func(string) string) (*routesConfig, error) {
	var fc fileConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&fc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("config file %s: empty", path)
		}
		var root yaml.Node
		_ = yaml.Unmarshal(data, &root) // for the field names of type errors
		return nil, yamlErrors(path, err, &root)
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		line := more.Line
		if err != nil {
			return nil, yamlErrors(path, err, &more)
		}
		return nil, fmt.Errorf("%s:%d: a second YAML document (after ---): the configuration is one document", path, line)
	}
	var root yaml.Node
	_ = yaml.Unmarshal(data, &root) // it decoded above
	var errs configErrors
	bad := func(line int, field, format string, a ...any) {
		errs = append(errs, fmt.Sprintf("%s:%d: %s: %s", path, line, field, fmt.Sprintf(format, a...)))
	}
	rc := &routesConfig{Path: path, Models: map[string][]orchestrator.Target{}}
	// Past the caps nothing else is checked: thousands of errors say less.
	if len(fc.Upstreams) > maxUpstreams {
		return nil, configErrors{fmt.Sprintf("%s:%d: upstreams: %d upstreams; at most %d", path, lineOf(&root, "upstreams"), len(fc.Upstreams), maxUpstreams)}
	}
	if len(fc.Models) > maxModels {
		return nil, configErrors{fmt.Sprintf("%s:%d: models: %d models; at most %d", path, lineOf(&root, "models"), len(fc.Models), maxModels)}
	}
	if len(fc.Upstreams) == 0 {
		bad(lineOf(&root, "upstreams"), "upstreams", "at least one upstream is required")
	}
	names := map[string]int{} // name -> line
	for i, fu := range fc.Upstreams {
		at := func(field ...any) int { return lineOf(&root, append([]any{"upstreams", i}, field...)...) }
		field := func(f string) string { return fmt.Sprintf("upstreams[%d].%s", i, f) }
		u := routeUpstream{
			Name: fu.Name, Kind: fu.Kind, BaseURL: fu.BaseURL, APIKeyEnv: fu.APIKeyEnv,
			Budget: s.Budget, Queue: s.Queue, AcquireTimeout: s.AcquireTimeout, ConnectTimeout: s.ConnectTimeout,
			TTFTTimeout: s.TTFTTimeout, IdleTimeout: s.IdleTimeout,
			BreakerMinCalls: s.BreakerMin, BreakerFailureRate: s.BreakerRate, BreakerWindow: s.BreakerWindow, BreakerCoolDown: s.BreakerCool,
		}
		switch {
		case fu.Name == "":
			bad(at(), field("name"), "required")
		case !upstreamName.MatchString(fu.Name):
			bad(at("name"), field("name"), "%q: use 1 to 64 of A-Z a-z 0-9 . _ -", fu.Name)
		case names[fu.Name] != 0:
			bad(at("name"), field("name"), "duplicate upstream name %q (first at line %d)", fu.Name, names[fu.Name])
		default:
			names[fu.Name] = at("name")
		}
		switch fu.Kind {
		case "openai":
			if fu.BaseURL == "" {
				bad(at(), field("base_url"), "required for kind openai (an OpenAI-compatible base URL, e.g. http://127.0.0.1:11434/v1)")
			} else if err := checkBaseURL(fu.BaseURL, "api_key_env"); err != nil {
				bad(at("base_url"), field("base_url"), "%v", err)
			}
			switch {
			case fu.APIKeyEnv == "":
			case !envName.MatchString(fu.APIKeyEnv):
				// Not echoed: it may be the key itself, pasted here.
				bad(at("api_key_env"), field("api_key_env"), "must be the NAME of an environment variable ([A-Za-z_][A-Za-z0-9_]*) that holds the key, never the key itself")
			default:
				u.apiKey = getenv(fu.APIKeyEnv)
				if u.apiKey == "" {
					bad(at("api_key_env"), field("api_key_env"), "the environment variable %s is not set (api_key_env names the variable holding the key, never the key)", fu.APIKeyEnv)
				}
			}
		case "sim":
			if fu.BaseURL != "" {
				bad(at("base_url"), field("base_url"), "only for kind openai (kind sim is the built-in simulated model)")
			}
			if fu.APIKeyEnv != "" {
				bad(at("api_key_env"), field("api_key_env"), "only for kind openai")
			}
		case "":
			bad(at(), field("kind"), "required: openai or sim")
		default:
			bad(at("kind"), field("kind"), "%q: must be openai or sim", fu.Kind)
		}
		if fu.Budget != nil {
			if u.Budget = *fu.Budget; u.Budget <= 0 {
				bad(at("budget"), field("budget"), "must be > 0 (got %d)", u.Budget)
			}
		}
		if fu.Queue != nil {
			if u.Queue = *fu.Queue; u.Queue < 0 {
				bad(at("queue"), field("queue"), "must be >= 0 (got %d); 0 = no queue", u.Queue)
			}
		}
		type durField struct {
			name     string
			v, dst   *time.Duration
			zeroOK   bool
			inParent []any
		}
		durs := []durField{
			{"acquire_timeout", fu.AcquireTimeout, &u.AcquireTimeout, true, nil},
			{"connect_timeout", fu.ConnectTimeout, &u.ConnectTimeout, false, nil},
			{"ttft_timeout", fu.TTFTTimeout, &u.TTFTTimeout, false, nil},
			{"idle_timeout", fu.IdleTimeout, &u.IdleTimeout, false, nil},
		}
		if b := fu.Breaker; b != nil {
			durs = append(durs,
				durField{"window", b.Window, &u.BreakerWindow, false, []any{"breaker"}},
				durField{"cooldown", b.CoolDown, &u.BreakerCoolDown, false, []any{"breaker"}})
			if b.MinCalls != nil {
				if u.BreakerMinCalls = *b.MinCalls; u.BreakerMinCalls <= 0 {
					bad(at("breaker", "min_calls"), field("breaker.min_calls"), "must be > 0 (got %d)", u.BreakerMinCalls)
				}
			}
			if b.FailureRate != nil {
				// Written so that NaN (.nan) fails too.
				if u.BreakerFailureRate = *b.FailureRate; !(u.BreakerFailureRate > 0 && u.BreakerFailureRate <= 1) {
					bad(at("breaker", "failure_rate"), field("breaker.failure_rate"), "must be in (0, 1] (got %g)", u.BreakerFailureRate)
				}
			}
		}
		if a := fu.Adaptive; a != nil {
			u.Adaptive = pipeline.AdaptiveConfig{Enabled: true, Min: 1, Max: u.Budget, Interval: s.BudgetAdaptiveInterval}
			if a.Min != nil {
				if u.Adaptive.Min = *a.Min; u.Adaptive.Min < 1 {
					bad(at("adaptive", "min"), field("adaptive.min"), "must be >= 1 (got %d)", u.Adaptive.Min)
				}
			}
			if a.Max != nil {
				if u.Adaptive.Max = *a.Max; u.Adaptive.Max < u.Adaptive.Min {
					bad(at("adaptive", "max"), field("adaptive.max"), "must be >= adaptive.min (got %d < %d)", u.Adaptive.Max, u.Adaptive.Min)
				}
			}
			durs = append(durs, durField{"interval", a.Interval, &u.Adaptive.Interval, false, []any{"adaptive"}})
		}
		for _, d := range durs {
			if d.v == nil {
				continue
			}
			*d.dst = *d.v
			name := strings.Join(append(anyStrings(d.inParent), d.name), ".")
			if *d.v < 0 || (*d.v == 0 && !d.zeroOK) {
				bad(at(append(d.inParent, d.name)...), field(name), "must be > 0 (got %s)", *d.v)
			}
		}
		rc.Upstreams = append(rc.Upstreams, u)
	}
	if len(fc.Models) == 0 {
		bad(lineOf(&root, "models"), "models", "at least one model is required (model name: [upstream, ...])")
	}
	for m, targets := range fc.Models {
		field := "models." + m
		if err := checkModelName(m); err != nil {
			// Not the name as a field: it may hold a line break.
			bad(lineOf(&root, "models", m), "models", "model name %q: %v", m, err)
			field = fmt.Sprintf("models[%q]", m)
		}
		if len(targets) == 0 {
			bad(lineOf(&root, "models", m), field, "lists no upstream")
		}
		seen := map[string]bool{}
		for j, tg := range targets {
			tf := fmt.Sprintf("%s[%d]", field, j)
			switch {
			case tg.Upstream == "":
				bad(tg.line, tf, "names no upstream")
			case names[tg.Upstream] == 0:
				bad(tg.line, tf, "unknown upstream %q (upstreams: %s)", tg.Upstream, strings.Join(slices.Sorted(maps.Keys(names)), ", "))
			case seen[tg.Upstream]:
				bad(tg.line, tf, "upstream %q is listed twice", tg.Upstream)
			}
			if tg.Model != "" {
				if err := checkModelName(tg.Model); err != nil {
					bad(tg.line, tf+".model", "%q: %v", tg.Model, err)
				}
			}
			seen[tg.Upstream] = true
			rc.Models[m] = append(rc.Models[m], orchestrator.Target{Upstream: tg.Upstream, Model: tg.Model})
		}
	}
	rc.DefaultModel = fc.DefaultModel
	switch {
	case rc.DefaultModel != "":
		if _, ok := fc.Models[rc.DefaultModel]; !ok && len(fc.Models) > 0 {
			bad(lineOf(&root, "default_model"), "default_model", "%q is not among the models (%s)", rc.DefaultModel, modelNames(fc.Models))
		}
	case s.given["SLUICE_MODEL"]:
		rc.DefaultModel = s.Model
		if _, ok := fc.Models[rc.DefaultModel]; !ok && len(fc.Models) > 0 {
			bad(1, "default_model", "not set, and SLUICE_MODEL=%q is not among the models (%s)", s.Model, modelNames(fc.Models))
		}
	case len(fc.Models) == 1:
		rc.DefaultModel = slices.Sorted(maps.Keys(fc.Models))[0]
	case len(fc.Models) > 1:
		bad(1, "default_model", "required with several models (%s)", modelNames(fc.Models))
	}
	if len(errs) > 0 {
		sort.SliceStable(errs, func(i, j int) bool { return errLine(errs[i]) < errLine(errs[j]) })
		return nil, errs
	}
	return rc, nil
}

// modelNames lists the models of a file for an error, a name that is
// not valid quoted (it may hold a line break).
func modelNames(models map[string][]fileTarget) string {
	names := slices.Sorted(maps.Keys(models))
	for i, m := range names {
		if checkModelName(m) != nil {
			names[i] = strconv.Quote(m)
		}
	}
	return strings.Join(names, ", ")
}

// checkModelName refuses a model name that is empty, longer than
// maxModelName bytes, or holds anything but printable characters other
// than spaces (model ids such as llama3.1:8b, org/model, name@version
// pass): the names are listed, logged and sent upstream.
func checkModelName(m string) error {
	switch {
	case m == "":
		return errors.New("empty")
	case len(m) > maxModelName:
		return fmt.Errorf("longer than %d bytes", maxModelName)
	case !utf8.ValidString(m):
		return errors.New("not UTF-8")
	}
	for _, r := range m {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return fmt.Errorf("holds %q: use printable characters without spaces (e.g. llama3.1:8b, org/model)", r)
		}
	}
	return nil
}

// checkBaseURL is the check of an upstream's base URL (SLUICE_UPSTREAM,
// SLUICE_EMBEDDINGS, a file's base_url): http or https, a host, and no
// credentials, which would be printed with it (keyHint names where the
// key goes instead). A URL that holds credentials, or may (an @ in what
// does not parse), is never echoed.
func checkBaseURL(v, keyHint string) error {
	u, err := url.Parse(v)
	switch {
	case err == nil && u.User != nil:
		return errURLUserinfo(keyHint)
	case err != nil && strings.Contains(v, "@"):
		return &hiddenValueError{msg: "not a URL (not echoed: it holds an @)"}
	case err != nil:
		return fmt.Errorf("%q is not a URL: %w", v, err)
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("%q: must be an http:// or https:// URL with a host", v)
	}
	return nil
}

// lineRE is the decoder's "line N: " prefix of one error.
var lineRE = regexp.MustCompile(`^line (\d+): `)

// yamlErrors makes the decoder's error read in the file's words, one
// "path:line: message" a line.
func yamlErrors(path string, err error, root *yaml.Node) configErrors {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n")
	for _, r := range [][2]string{ // the longer first
		{"in type main.fileConfig", "at the top level (default_model, upstreams, models)"},
		{"in type main.fileUpstream", "in an upstream (name, kind, base_url, api_key_env, budget, acquire_timeout, queue, " +
			"connect_timeout, ttft_timeout, idle_timeout, breaker, adaptive)"},
		{"in type main.fileBreaker", "in breaker (min_calls, failure_rate, window, cooldown)"},
		{"in type main.fileAdaptive", "in adaptive (min, max, interval)"},
		{"into time.Duration", "into a duration (e.g. 1.5s, 300ms)"},
		{"main.fileTarget", "a model's upstream"},
		{"main.fileUpstream", "an upstream"},
		{"main.fileBreaker", "a breaker"},
		{"main.fileAdaptive", "an adaptive budget"},
		{"main.fileConfig", "the configuration"},
	} {
		msg = strings.ReplaceAll(msg, r[0], r[1])
	}
	var errs configErrors
	for _, l := range strings.Split(msg, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if m := lineRE.FindStringSubmatch(l); m != nil {
			rest := l[len(m[0]):]
			if k := keyAt(root, atoi(m[1])); k != "" && !strings.HasPrefix(rest, "field ") {
				rest = k + ": " + rest
			}
			l = path + ":" + m[1] + ": " + rest
		} else {
			l = path + ": " + l
		}
		errs = append(errs, l)
	}
	return errs
}

// keyAt returns the dotted path of the mapping key on line (upstreams[1].budget),
// or "".
func keyAt(n *yaml.Node, line int) string {
	var walk func(n *yaml.Node, path string) string
	walk = func(n *yaml.Node, path string) string {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				if k := walk(c, path); k != "" {
					return k
				}
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				if k := walk(c, fmt.Sprintf("%s[%d]", path, i)); k != "" {
					return k
				}
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				p := n.Content[i].Value
				if path != "" {
					p = path + "." + p
				}
				if n.Content[i].Line == line && n.Content[i+1].Kind == yaml.ScalarNode {
					return p
				}
				if k := walk(n.Content[i+1], p); k != "" {
					return k
				}
			}
		}
		return ""
	}
	return walk(n, "")
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// lineOf returns the line of the node at path (mapping keys as strings,
// sequence indexes as ints) in the document root, or of its deepest
// existing ancestor; 1 when none.
func lineOf(root *yaml.Node, path ...any) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := max(n.Line, 1)
	for _, p := range path {
		var next *yaml.Node
		switch k := p.(type) {
		case string:
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == k {
						line = n.Content[i].Line
						next = n.Content[i+1]
					}
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && k < len(n.Content) {
				next = n.Content[k]
				line = next.Line
			}
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}

// errLine is the line number of a "path:line: ..." error, for sorting.
func errLine(e string) int {
	var line int
	if _, rest, ok := strings.Cut(e, ":"); ok {
		fmt.Sscanf(rest, "%d", &line)
	}
	return line
}

func anyStrings(a []any) []string {
	out := make([]string, len(a))
	for i, v := range a {
		out[i] = fmt.Sprint(v)
	}
	return out
}

// specs builds the orchestrator's routes of the file: one upstream client
// per entry (sim: the SLUICE_SIM_* settings; openai: its base URL, key and
// connect timeout).
func (rc *routesConfig) specs(s *settings) ([]orchestrator.RouteSpec, error) {
	var specs []orchestrator.RouteSpec
	for _, u := range rc.Upstreams {
		var up upstream.Upstream
		if u.Kind == "sim" {
			up = newSim(s)
		} else {
			o, err := upstream.NewOpenAI(upstream.OpenAIConfig{BaseURL: u.BaseURL, APIKey: u.apiKey, ConnectTimeout: u.ConnectTimeout, Name: u.Name})
			if err != nil {
				return nil, fmt.Errorf("config file %s: upstream %s: %w", rc.Path, u.Name, err)
			}
			up = o
		}
		specs = append(specs, orchestrator.RouteSpec{
			Name: u.Name, Upstream: up, Budget: u.Budget, QueueLimit: queueLimit(u.Queue),
			AcquireTimeout: negIfZero(u.AcquireTimeout), TTFTTimeout: u.TTFTTimeout, IdleTimeout: u.IdleTimeout,
			BreakerMinCalls: u.BreakerMinCalls, BreakerFailureRate: u.BreakerFailureRate,
			BreakerWindow: u.BreakerWindow, BreakerCoolDown: u.BreakerCoolDown,
			Adaptive: u.Adaptive,
		})
	}
	return specs, nil
}

// negIfZero maps a setting's 0 ("refuse at once") to the RouteSpec's
// negative (its 0 means "Config's").
func negIfZero(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// summary describes a checked file for "sluice config check".
func (rc *routesConfig) summary(w io.Writer) {
	fmt.Fprintf(w, "%s: ok: %d upstreams, %d models, default model %s\n", rc.Path, len(rc.Upstreams), len(rc.Models), rc.DefaultModel)
	fmt.Fprintln(w, "upstreams:")
	for _, u := range rc.Upstreams {
		where := "built-in simulated model"
		if u.Kind == "openai" {
			where = u.BaseURL
			if u.APIKeyEnv != "" {
				where += " (key from $" + u.APIKeyEnv + ")"
			}
		}
		fmt.Fprintf(w, "  %-16s %-6s %s\n", u.Name, u.Kind, where)
		fmt.Fprintf(w, "  %-16s        budget %d, acquire_timeout %s, queue %d, connect %s, ttft %s, idle %s, breaker %d calls / %g / %s / %s\n",
			"", u.Budget, u.AcquireTimeout, u.Queue, u.ConnectTimeout, u.TTFTTimeout, u.IdleTimeout,
			u.BreakerMinCalls, u.BreakerFailureRate, u.BreakerWindow, u.BreakerCoolDown)
		if a := u.Adaptive; a.Enabled {
			fmt.Fprintf(w, "  %-16s        adaptive budget between %d and %d, window %s\n", "", a.Min, a.Max, a.Interval)
		}
	}
	fmt.Fprintln(w, "models (upstreams in order of preference):")
	for _, m := range slices.Sorted(maps.Keys(rc.Models)) {
		var hops []string
		for _, t := range rc.Models[m] {
			h := t.Upstream
			if t.Model != "" && t.Model != m {
				h += " (as " + t.Model + ")"
			}
			hops = append(hops, h)
		}
		fmt.Fprintf(w, "  %-16s -> %s\n", m, strings.Join(hops, " -> "))
	}
}

// cmdConfig is "sluice config check [FILE]": it checks a configuration
// file (default: SLUICE_CONFIG) as serving would, and prints a summary
// (exit 0) or every error with its line (exit 1).
func cmdConfig(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	usage := "usage: sluice config check [FILE]   check a configuration file (default: $SLUICE_CONFIG) and print its summary"
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stderr, usage)
		if len(args) == 0 {
			return exitFailed
		}
		return exitOK
	}
	if args[0] != "check" || len(args) > 2 {
		return fail(stderr, "config: unknown arguments %q\n%s", strings.Join(args, " "), usage)
	}
	path := getenv("SLUICE_CONFIG")
	if len(args) == 2 {
		path = args[1]
	}
	if path == "" {
		return fail(stderr, "config check: no file given and SLUICE_CONFIG is not set\n%s", usage)
	}
	// The defaults of the fields a file leaves out are the settings.
	s, err := loadSettings(nil, func(name string) string {
		if name == "SLUICE_CONFIG" {
			return "" // checked below, not at load
		}
		return getenv(name)
	})
	if err != nil {
		return fail(stderr, "%v", err)
	}
	rc, err := loadRoutes(path, s, getenv)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitFailed
	}
	rc.summary(stdout)
	return exitOK
}

// models is the orchestrator's Config.Models; nil without a file.
func (rc *routesConfig) models() map[string][]orchestrator.Target {
	if rc == nil {
		return nil
	}
	return rc.Models
}
