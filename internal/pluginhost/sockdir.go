package pluginhost

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Bounds of a plugin's socket folder when the host can make it a tmpfs of its own. The folder
// holds the plugin's gRPC socket and the host's dial socket, which take an inode each and no
// space: the bounds leave room to spare and nothing to fill a disk with.
const (
	socketFolderSize   = 1 << 20
	socketFolderInodes = 64
)

// mountSocketFolder makes dir, a plugin's socket folder, just made and empty, a tmpfs of its
// own with the folder's owner and mode: what the plugin writes there is bounded by the tmpfs
// (socketFolderSize, socketFolderInodes), not by the free space of the host's disk. Only a host
// with the privilege to mount (root) can.
func mountSocketFolder(dir string) error {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return fmt.Errorf("plugin socket folder: %w", err)
	}
	opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=%04o,uid=%d,gid=%d",
		socketFolderSize, socketFolderInodes, st.Mode&0o7777, st.Uid, st.Gid)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, opts); err != nil {
		return fmt.Errorf("plugin socket folder: mount a tmpfs: %w", err)
	}
	return nil
}

// unmountSocketFolder detaches the tmpfs of a plugin's socket folder, and what it held with it.
func unmountSocketFolder(dir string) error {
	if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("plugin socket folder: unmount: %w", err)
	}
	return nil
}

// canMountSocketFolders says whether this host can give its plugins socket folders of their
// own tmpfs, by trying in its run dir.
func canMountSocketFolders(runDir string) bool {
	dir, err := os.MkdirTemp(runDir, "mount-probe-")
	if err != nil {
		return false
	}
	defer os.Remove(dir)
	if mountSocketFolder(dir) != nil {
		return false
	}
	return unmountSocketFolder(dir) == nil
}

// unmountUnder detaches every mount at or below dir, deepest first: the socket folders a host
// left mounted when it died mid-run, or that this one still has at its close. RemoveAll cannot
// remove a mount point.
func unmountUnder(dir string) error {
	mounts, err := mountPoints()
	if err != nil {
		return err
	}
	var under []string
	for _, m := range mounts {
		if m == dir || strings.HasPrefix(m, dir+"/") {
			under = append(under, m)
		}
	}
	slices.SortFunc(under, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, m := range under {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
		}
	}
	return errors.Join(errs...)
}

// mountPoints lists the mount points of this process's mount namespace.
func mountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var points []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for s.Scan() {
		// id parent major:minor root mount-point options ...
		if fields := strings.Fields(s.Text()); len(fields) > 4 {
			points = append(points, filepath.Clean(unescapeMountinfo(fields[4])))
		}
	}
	return points, s.Err()
}

// unescapeMountinfo undoes the octal escapes (\040 for a space) of a path in mountinfo.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
