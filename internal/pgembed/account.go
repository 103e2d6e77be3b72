package pgembed

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// account is the unprivileged user initdb and postgres run as when the caller is root; PostgreSQL
// refuses to run as root.
type account struct {
	name     string
	uid, gid uint32
}

// serverAccount returns nil when the caller is not root: postgres then runs as the caller and
// name is ignored, since only root can switch users. As root it returns name, else "postgres"
// if that user exists (a system PostgreSQL package creates it), else "nobody".
func serverAccount(name string) (*account, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	candidates := []string{name}
	if name == "" {
		candidates = []string{"postgres", "nobody"}
	}
	var lastErr error
	for _, c := range candidates {
		u, err := user.Lookup(c)
		if err != nil {
			lastErr = err
			continue
		}
		uid, err := strconv.ParseUint(u.Uid, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("pgembed: user %s: uid %q: %w", c, u.Uid, err)
		}
		gid, err := strconv.ParseUint(u.Gid, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("pgembed: user %s: gid %q: %w", c, u.Gid, err)
		}
		if uid == 0 {
			return nil, fmt.Errorf("pgembed: user %s has uid 0, PostgreSQL refuses to run as root: set BARRAGE_POSTGRES_USER to an unprivileged user", c)
		}
		return &account{name: c, uid: uint32(uid), gid: uint32(gid)}, nil
	}
	return nil, fmt.Errorf("pgembed: running as root, PostgreSQL needs an unprivileged user to run as: %w (set BARRAGE_POSTGRES_USER)", lastErr)
}

// ErrUnreachable means the caller is root and the unprivileged account PostgreSQL runs as cannot
// enter a folder on the way to the data folder.
var ErrUnreachable = errors.New("pgembed: data folder unreachable for the PostgreSQL account")

// credential switches a child to the account; nil (run as the caller) for a nil account. The
// supplementary groups are cleared, which is also what checkReachable assumes.
func (a *account) credential() *syscall.Credential {
	if a == nil {
		return nil
	}
	return &syscall.Credential{Uid: a.uid, Gid: a.gid, Groups: []uint32{}}
}

// chown hands path to the account; a no-op when postgres runs as the caller.
func (a *account) chown(path string) error {
	if a == nil {
		return nil
	}
	return os.Chown(path, int(a.uid), int(a.gid))
}

// checkReachable tells whether the account can enter every folder from / down to dir, judged by
// the mode bits (ACLs are not consulted). It does not change any of them: they belong to the
// user, who must decide.
func (a *account) checkReachable(dir string) error {
	if a == nil {
		return nil
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	var chain []string
	for p := real; ; p = filepath.Dir(p) {
		chain = append(chain, p)
		if p == filepath.Dir(p) {
			break
		}
	}
	for i := len(chain) - 1; i >= 0; i-- {
		fi, err := os.Stat(chain[i])
		if err != nil {
			return err
		}
		if !a.canEnter(fi) {
			return fmt.Errorf("%w: PostgreSQL refuses to run as root, so it runs as user %s (uid %d), "+
				"which cannot enter %s (needed for %s, mode %s): set BARRAGE_DATA_DIR to a folder that user can reach "+
				"(e.g. under /var/lib or /srv), or BARRAGE_POSTGRES_USER to a user that can reach it",
				ErrUnreachable, a.name, a.uid, chain[i], dir, fi.Mode().Perm())
		}
	}
	return nil
}

func (a *account) canEnter(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true // not a Unix stat: cannot judge, let postgres report it
	}
	perm := fi.Mode().Perm()
	switch {
	case st.Uid == a.uid:
		return perm&0o100 != 0
	case st.Gid == a.gid:
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}

// mkdirAll is os.MkdirAll that also sets perm on every folder it creates, whatever the umask,
// and leaves existing folders alone.
func mkdirAll(dir string, perm fs.FileMode) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a folder", dir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirAll(parent, perm); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, perm); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return os.Chmod(dir, perm)
}
