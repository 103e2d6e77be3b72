package pluginhost

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Where things are inside the sandbox.
const (
	// sandboxSocketDir is the plugin's socket folder, where it creates the Unix socket the host
	// dials: a tmpfs of its own (socketFolderSize, socketFolderInodes), which the host reaches
	// through the launcher's /proc/PID/root.
	sandboxSocketDir = "/run/barrage"
	// sandboxPluginDir holds the plugin's binary, bound in read-only under its own name.
	sandboxPluginDir = "/plugin"
)

// Bounds of a plugin's socket folder. It holds the plugin's gRPC socket and the host's dial
// socket, which take an inode each and no space: the bounds leave room to spare and nothing to
// fill a disk with.
const (
	socketFolderSize   = 1 << 20
	socketFolderInodes = 64
)

// systemPaths are what a sandboxed plugin sees of the host's files, read-only: the programs,
// libraries and configuration of the system, no home, data, spool, run or temporary folder.
var systemPaths = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}

// devices are the character devices a plugin may use, bound from the host's /dev.
var devices = []string{"null", "zero", "full", "random", "urandom"}

// confine builds the plugin's view of the files and enters it. It runs in the launcher, as root
// of the plugin's new user namespace (so with every capability over its new mount namespace and
// none over the host's), before the capabilities are dropped:
//
//   - a tmpfs becomes the new root, read-only once built;
//   - the system's folders (systemPaths) and the operator's extra paths are bound in read-only,
//     without set-user-ID or device files;
//   - /dev holds a few harmless devices, /dev/shm and /tmp are private tmpfs;
//   - /proc is a new one, of the plugin's PID namespace: it shows the plugin's processes only;
//   - the plugin's binary is at /plugin/NAME;
//   - its socket folder, /run/barrage, is a small tmpfs of its own, with the host's dial socket
//     bound in read-only when the run grants it hosts: nothing the plugin writes there reaches
//     the host's disk;
//   - pivot_root, then the host's tree is detached: nothing else of the host remains reachable.
func confine(l *launchFlags) error {
	// Nothing done here may travel back to the host's mount namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mounts private: %w", err)
	}
	root := l.root
	if err := unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m,nr_inodes=4096"); err != nil {
		return fmt.Errorf("mount the new root: %w", err)
	}
	for _, p := range append(slices.Clone(systemPaths), l.paths...) {
		if err := bindIn(root, p, true); err != nil {
			return err
		}
	}
	if err := mountTmpfs(filepath.Join(root, "tmp"), "mode=1777,size=64m"); err != nil {
		return err
	}
	// Extra paths under /tmp (a Python virtualenv, say) land on the private /tmp: bind them
	// again now that it is mounted.
	for _, p := range l.paths {
		if p == "/tmp" || strings.HasPrefix(p, "/tmp/") {
			if err := bindIn(root, p, true); err != nil {
				return err
			}
		}
	}
	if err := makeDev(root); err != nil {
		return err
	}
	if err := mkdirIn(root, "/proc"); err != nil {
		return err
	}
	if err := unix.Mount("proc", filepath.Join(root, "proc"), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	if err := mountSocketFolder(root); err != nil {
		return err
	}
	if l.dialSock != "" {
		if err := bindAt(root, l.dialSock, filepath.Join(sandboxSocketDir, dialSocketName), true); err != nil {
			return err
		}
	}
	if err := bindAt(root, l.path, filepath.Join(sandboxPluginDir, filepath.Base(l.path)), true); err != nil {
		return err
	}
	if err := os.Chdir(root); err != nil {
		return fmt.Errorf("enter the new root: %w", err)
	}
	// pivot_root(".", ".") stacks the old root under the new one; detaching it leaves the
	// new root alone.
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the host's files: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	if err := unix.MountSetattr(-1, "/", 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}); err != nil {
		return fmt.Errorf("make the root read-only: %w", err)
	}
	return nil
}

// bindIn binds the host's path at the same place under root. A symbolic link (/bin on a merged
// /usr) is copied as a link; a path the host lacks is left out.
func bindIn(root, path string, readOnly bool) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sandbox path %s: %w", path, err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(path)
		if err != nil {
			return err
		}
		if err := mkdirIn(root, filepath.Dir(path)); err != nil {
			return err
		}
		if err := os.Symlink(target, filepath.Join(root, path)); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("sandbox link %s: %w", path, err)
		}
		return nil
	}
	return bindAt(root, path, path, readOnly)
}

// bindAt binds the host's src (a folder or a file) at dst under root.
func bindAt(root, src, dst string, readOnly bool) error {
	fi, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("sandbox path %s: %w", src, err)
	}
	target := filepath.Join(root, dst)
	if fi.IsDir() {
		if err := mkdirIn(root, dst); err != nil {
			return err
		}
	} else {
		if err := mkdirIn(root, filepath.Dir(dst)); err != nil {
			return err
		}
		f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("sandbox mount point %s: %w", dst, err)
		}
		_ = f.Close()
	}
	if err := unix.Mount(src, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", src, err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if readOnly {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	if err := unix.MountSetattr(-1, target, unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("restrict %s: %w", dst, err)
	}
	return nil
}

func mkdirIn(root, path string) error {
	if err := os.MkdirAll(filepath.Join(root, path), 0o755); err != nil {
		return fmt.Errorf("sandbox folder %s: %w", path, err)
	}
	return nil
}

func mountTmpfs(target, opts string) error {
	if err := os.MkdirAll(target, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", target, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount a tmpfs at %s: %w", target, err)
	}
	return nil
}

// mountSocketFolder makes the plugin's socket folder under root: a tmpfs of socketFolderSize
// bytes and socketFolderInodes inodes, the plugin's (root of its user namespace) alone. The
// host reaches it through /proc/PID/root of the launcher (see procRunner.pluginToHost), never
// through a folder of its own that the plugin could fill.
func mountSocketFolder(root string) error {
	target := filepath.Join(root, sandboxSocketDir)
	if err := os.MkdirAll(target, 0o755); err != nil {
		return fmt.Errorf("sandbox folder %s: %w", sandboxSocketDir, err)
	}
	opts := fmt.Sprintf("mode=0700,size=%d,nr_inodes=%d", socketFolderSize, socketFolderInodes)
	if err := unix.Mount("tmpfs", target, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, opts); err != nil {
		return fmt.Errorf("mount the socket folder: %w", err)
	}
	return nil
}

// makeDev builds a minimal /dev: a few devices bound from the host's, the usual links, and a
// private /dev/shm.
func makeDev(root string) error {
	dev := filepath.Join(root, "dev")
	if err := mountTmpfs(dev, "mode=0755,size=64k"); err != nil {
		return err
	}
	for _, d := range devices {
		src := "/dev/" + d
		if _, err := os.Stat(src); err != nil {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dev, d), os.O_CREATE|os.O_WRONLY, 0o666)
		if err != nil {
			return err
		}
		_ = f.Close()
		if err := unix.Mount(src, filepath.Join(dev, d), "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s: %w", src, err)
		}
	}
	for name, target := range map[string]string{
		"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
	} {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return err
		}
	}
	if err := mountTmpfs(filepath.Join(dev, "shm"), "mode=1777,size=64m"); err != nil {
		return err
	}
	return unix.MountSetattr(-1, dev, 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID})
}

// Secure bits (linux/securebits.h): root in the plugin's user namespace gets no capability
// back at an exec, and none of this can be undone.
const (
	secbitNoRoot               = 1 << 0
	secbitNoRootLocked         = 1 << 1
	secbitNoSetuidFixup        = 1 << 2
	secbitNoSetuidFixupLocked  = 1 << 3
	secbitKeepCapsLocked       = 1 << 5
	secbitNoCapAmbientRaise    = 1 << 6
	secbitNoCapAmbientRaiseLck = 1 << 7
)

// dropPrivileges leaves the plugin no capability, not even in its own user namespace, and no way
// to gain one: the bounding set is emptied, root's exec-time capabilities are switched off and
// locked, and no_new_privs is set (which also makes set-user-ID files inert).
func dropPrivileges() error {
	last := 40
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	bits := secbitNoRoot | secbitNoRootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked |
		secbitKeepCapsLocked | secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLck
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, uintptr(bits), 0, 0, 0); err != nil {
		return fmt.Errorf("secure bits: %w", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	return setNoNewPrivs()
}

func setNoNewPrivs() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	return nil
}

// clearCapabilities empties the calling thread's capability sets: the last step before the exec.
func clearCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clear capabilities: %w", err)
	}
	return nil
}
