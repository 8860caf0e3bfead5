package host

import (
	"fmt"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"golang.org/x/sys/unix"
)

// Service manager notifications (sd_notify): hostd runs as a systemd
// Type=notify service when NOTIFY_SOCKET is set, and does nothing
// otherwise.
const (
	notifyReady     = daemon.SdNotifyReady
	notifyReloading = daemon.SdNotifyReloading
	notifyStopping  = daemon.SdNotifyStopping
)

// notify tells the service manager the server's state. RELOADING carries
// the CLOCK_MONOTONIC timestamp systemd 253 and later require (older
// ones ignore it).
func (s *Server) notify(state string) {
	msg := state
	if state == notifyReloading {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err == nil {
			msg += fmt.Sprintf("\nMONOTONIC_USEC=%d", time.Duration(ts.Nano())/time.Microsecond)
		}
	}
	if _, err := daemon.SdNotify(false, msg); err != nil {
		s.logger.Warn("sd_notify", "state", state, "err", err)
	}
}
