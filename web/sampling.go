package web

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/sluice-dev/sluice/stream/upstream"
)

// maxStop bounds the stop sequences of a request (OpenAI's limit).
const maxStop = 4

// maxStopLen bounds one stop sequence, in bytes.
const maxStopLen = 256

// samplingIn are the common OpenAI sampling parameters, accepted by the
// task API's bodies and the OpenAI-compatible doors and forwarded upstream
// as they are (upstream.Sampling). They are part of what makes two
// requests identical for coalescing; the cache does not key on them but
// for stop, which cuts the answer (the orchestrator's cacheContext).
type samplingIn struct {
	Temperature      *float64        `json:"temperature"`
	TopP             *float64        `json:"top_p"`
	Stop             json.RawMessage `json:"stop"` // a string or an array of strings
	Seed             *int64          `json:"seed"`
	PresencePenalty  *float64        `json:"presence_penalty"`
	FrequencyPenalty *float64        `json:"frequency_penalty"`
}

// toUpstream validates the parameters (OpenAI's ranges) and converts them;
// an error names the field (the OpenAI doors' "param").
func (in samplingIn) toUpstream() (upstream.Sampling, error) {
	out := upstream.Sampling{Temperature: in.Temperature, TopP: in.TopP, Seed: in.Seed,
		PresencePenalty: in.PresencePenalty, FrequencyPenalty: in.FrequencyPenalty}
	for _, f := range []struct {
		name   string
		v      *float64
		lo, hi float64
	}{
		{"temperature", in.Temperature, 0, 2},
		{"top_p", in.TopP, 0, 1},
		{"presence_penalty", in.PresencePenalty, -2, 2},
		{"frequency_penalty", in.FrequencyPenalty, -2, 2},
	} {
		if f.v != nil && (math.IsNaN(*f.v) || *f.v < f.lo || *f.v > f.hi) {
			return out, badParam(f.name, fmt.Sprintf("%s must be between %g and %g", f.name, f.lo, f.hi))
		}
	}
	if len(in.Stop) > 0 && string(in.Stop) != "null" {
		var one string
		if err := json.Unmarshal(in.Stop, &one); err == nil {
			out.Stop = []string{one}
		} else if err := json.Unmarshal(in.Stop, &out.Stop); err != nil {
			return out, badParam("stop", "stop must be a string or an array of strings")
		}
		if len(out.Stop) > maxStop {
			return out, badParam("stop", fmt.Sprintf("stop holds at most %d sequences", maxStop))
		}
		for _, s := range out.Stop {
			if s == "" || len(s) > maxStopLen {
				return out, badParam("stop", fmt.Sprintf("stop sequences must be 1 to %d bytes", maxStopLen))
			}
		}
	}
	return out, nil
}
