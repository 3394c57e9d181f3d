package load

import (
	"errors"
	"syscall"
	"time"
)

// sleepPrecise sleeps d (at most timerSlack and a little more) in a
// nanosleep system call, which Linux ends within its timer slack (50 µs
// by default) rather than on the poller's millisecond. The thread is
// blocked meanwhile; the runtime lends its P to other goroutines.
func sleepPrecise(d time.Duration) {
	if d <= 0 {
		return
	}
	ts := syscall.NsecToTimespec(int64(d))
	for {
		// Interrupted by a signal, it sleeps what is left.
		if err := syscall.Nanosleep(&ts, &ts); !errors.Is(err, syscall.EINTR) {
			return
		}
	}
}
