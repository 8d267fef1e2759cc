//go:build linux || darwin

package control

import (
	"fmt"
	"net"
	"os"
)

// checkPeer refuses a connection from another user, by the peer
// credentials the kernel keeps for a Unix socket (peerUID). The socket's
// permissions already keep others out; this is the second lock.
func checkPeer(c net.Conn) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var uid int
	var cerr error
	if err := raw.Control(func(fd uintptr) { uid, cerr = peerUID(int(fd)) }); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("control: reading the peer's credentials: %w", cerr)
	}
	if uid != os.Getuid() {
		return fmt.Errorf("control: refused a connection from uid %d: only the session's owner (uid %d) may use it", uid, os.Getuid())
	}
	return nil
}
