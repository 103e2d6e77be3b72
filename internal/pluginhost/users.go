package pluginhost

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// IDRange is a range of ids, First to First+Count-1, each a user and the group of the same
// number.
type IDRange struct {
	First, Count uint32
}

// DefaultUsers lie where no distribution, systemd or container manager assigns ids (systemd's
// "Users, Groups, UIDs and GIDs" leaves 1879048192 to 2147352575 unused): 0x70000000 and the
// 65535 after it.
var DefaultUsers = IDRange{First: 0x70000000, Count: 1 << 16}

func (r IDRange) check() error {
	if r.First == 0 || r.Count == 0 || uint64(r.First)+uint64(r.Count) > math.MaxUint32 {
		return fmt.Errorf("plugin users %d+%d: want a range of ids above 0 and below 2^32-1", r.First, r.Count)
	}
	return nil
}

// A plugin without a user namespace of its own runs as a user of its own, whose id it leases
// from the host's range for as long as it runs. RLIMIT_NPROC counts every process and thread
// of a user in a user namespace: with one user for all (nobody, shared by every plugin of every
// host on the machine, and by whatever else runs as nobody: a database, a service), a plugin's
// process limit would be the user's, and a plugin would be refused its very exec (EAGAIN) when
// others hold that many. A plugin in a user namespace of its own is counted there, alone. A
// user of its own also keeps a plugin from signalling, tracing or reading another through /proc.

// userLockDirName is the folder, under /run (else the temporary folder), where the hosts of a
// machine lock the ids they lease: one empty file per id, held with flock by the host whose
// plugin runs as it. The kernel drops the lock with the host, however it ends.
const userLockDirName = "barrage-plugin-users"

// userLease is a plugin's hold on an id of the range.
type userLease struct {
	id   int
	lock *os.File
}

// release gives the id back: the plugin and its process group are gone.
func (l *userLease) release() {
	if l != nil {
		_ = l.lock.Close()
	}
}

// as is the user and group the plugin runs as.
func (l *userLease) as() uidGid { return uidGid{uid: l.id, gid: l.id} }

// leaseUser leases the lowest id of r that no other plugin on this machine holds, that names no
// account or group, and that no process runs as: a process an earlier plugin left behind (a
// child in a session of its own, which the process group's kill misses) keeps its id from the
// next plugin. The lowest, so that the lock files are as many as plugins ever ran at once.
func leaseUser(r IDRange) (*userLease, error) {
	dir, err := userLockDir()
	if err != nil {
		return nil, fmt.Errorf("plugin users: %w", err)
	}
	var inUse map[uint32]bool // read once the first id is locked, so that it is not stale
	for id := r.First; id-r.First < r.Count; id++ {
		name := strconv.FormatUint(uint64(id), 10)
		if _, err := user.LookupId(name); err == nil {
			continue
		}
		if _, err := user.LookupGroupId(name); err == nil {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDONLY|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, fmt.Errorf("plugin users: %w", err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			_ = f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				continue // another plugin's
			}
			return nil, fmt.Errorf("plugin users: lock %s: %w", name, err)
		}
		if inUse == nil {
			inUse = idsInUse()
		}
		if inUse[id] {
			_ = f.Close()
			continue
		}
		return &userLease{id: int(id), lock: f}, nil
	}
	return nil, fmt.Errorf("plugin users: the %d ids from %d are all in use", r.Count, r.First)
}

// userLockDir is the folder of the id locks: root's alone (only a root host leases ids), the
// same for every host of the machine.
func userLockDir() (string, error) {
	var errs []error
	for _, base := range []string{"/run", os.TempDir()} {
		dir := filepath.Join(base, userLockDirName)
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			errs = append(errs, err)
			continue
		}
		fi, err := os.Lstat(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || !ok || st.Uid != 0 || fi.Mode().Perm()&0o022 != 0 {
			errs = append(errs, fmt.Errorf("%s is not a folder of root's alone", dir))
			continue
		}
		return dir, nil
	}
	return "", errors.Join(errs...)
}

// idsInUse are the user and group ids the processes of this machine run as (real, effective,
// saved and file system ids), from /proc/PID/status.
func idsInUse() map[uint32]bool {
	ids := map[uint32]bool{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue // gone
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("Uid:"))
			if !ok {
				rest, ok = bytes.CutPrefix(sc.Bytes(), []byte("Gid:"))
			}
			if !ok {
				continue
			}
			for _, f := range bytes.Fields(rest) {
				if id, err := strconv.ParseUint(string(f), 10, 32); err == nil {
					ids[uint32(id)] = true
				}
			}
		}
	}
	return ids
}
