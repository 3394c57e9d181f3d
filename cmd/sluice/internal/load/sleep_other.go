//go:build !linux

package load

import "time"

// sleepPrecise sleeps d. Outside Linux the runtime's timers are not
// rounded to the millisecond (kqueue and Windows' high-resolution
// timers).
func sleepPrecise(d time.Duration) {
	if d > 0 {
		time.Sleep(d)
	}
}
