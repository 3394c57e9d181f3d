package orchestrator

import "time"

// ShortSharedTiming shortens the shared state's timing in cfg
// (sharedTiming) for tests that exercise outages and lost owners: call
// timeouts, back-off and the pauses between write retries.
func ShortSharedTiming(cfg *Config) {
	cfg.timing = sharedTiming{
		callTimeout:      100 * time.Millisecond,
		backOff:          200 * time.Millisecond,
		opTimeout:        500 * time.Millisecond,
		mirrorInterval:   5 * time.Millisecond,
		retryMax:         100 * time.Millisecond,
		followWait:       100 * time.Millisecond,
		ownerGrace:       time.Second,
		remoteCancelWait: time.Second,
	}
}
