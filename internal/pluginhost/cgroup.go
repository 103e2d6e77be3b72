package pluginhost

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupControllers are the controllers a plugin's cgroup uses: memory and pids are needed,
// cpu is used where present.
var cgroupControllers = []string{"memory", "pids", "cpu"}

// cgroups is the folder (cgroup v2) or folders (v1, one per controller's hierarchy) in which a
// host makes its plugins' cgroups. It lies under the host's own cgroup, so the host's own limits
// bind its plugins too, and an operator can delegate it to a host that is not root.
type cgroups struct {
	version     int
	controllers []string
	dirs        []string // the host's folders, one per hierarchy
}

// cgroupMount is one mounted cgroup hierarchy.
type cgroupMount struct {
	point, root string
	v2          bool
	controllers []string // v1: the controllers of the hierarchy
}

func readCgroupMounts() ([]cgroupMount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []cgroupMount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(tail) < 3 {
			continue
		}
		switch tail[0] {
		case "cgroup2":
			out = append(out, cgroupMount{point: fields[4], root: fields[3], v2: true})
		case "cgroup":
			var cs []string
			for _, o := range strings.Split(tail[2], ",") {
				if slices.Contains(cgroupControllers, o) {
					cs = append(cs, o)
				}
			}
			if len(cs) > 0 {
				out = append(out, cgroupMount{point: fields[4], root: fields[3], controllers: cs})
			}
		}
	}
	return out, sc.Err()
}

// ownCgroups reads /proc/self/cgroup: the v2 path under "", a v1 path under each controller.
func ownCgroups() (map[string]string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out, nil
}

// inMount is where a cgroup path lies in the file system of its hierarchy's mount.
func (m cgroupMount) inMount(path string) string {
	rel, err := filepath.Rel(m.root, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		rel = "."
	}
	return filepath.Join(m.point, rel)
}

// newCgroups makes the host's cgroup folders, named for the host, under its own cgroups: v2
// when the unified hierarchy has the memory and pids controllers and lets this host enable
// them for its children, else v1 where memory and pids are mounted and writable. It first
// removes the folders of hosts that died. The error says why there is none.
func newCgroups(name string, log *slog.Logger) (*cgroups, error) {
	mounts, err := readCgroupMounts()
	if err != nil {
		return nil, fmt.Errorf("read the cgroup mounts: %w", err)
	}
	own, err := ownCgroups()
	if err != nil {
		return nil, fmt.Errorf("read this process's cgroups: %w", err)
	}
	var errs []error
	for _, m := range mounts {
		if !m.v2 {
			continue
		}
		cg, err := newCgroupsV2(m, own[""], name, log)
		if err == nil {
			return cg, nil
		}
		errs = append(errs, fmt.Errorf("cgroup v2: %w", err))
	}
	cg, err := newCgroupsV1(mounts, own, name, log)
	if err == nil {
		return cg, nil
	}
	errs = append(errs, fmt.Errorf("cgroup v1: %w", err))
	return nil, errors.Join(errs...)
}

func newCgroupsV2(m cgroupMount, own, name string, log *slog.Logger) (*cgroups, error) {
	base := m.inMount(own)
	avail, err := os.ReadFile(filepath.Join(base, "cgroup.controllers"))
	if err != nil {
		return nil, err
	}
	var cs []string
	for _, c := range cgroupControllers {
		if slices.Contains(strings.Fields(string(avail)), c) {
			cs = append(cs, c)
		}
	}
	if !slices.Contains(cs, "memory") || !slices.Contains(cs, "pids") {
		return nil, fmt.Errorf("%s offers the controllers %q, not memory and pids", base, strings.TrimSpace(string(avail)))
	}
	enable := "+" + strings.Join(cs, " +")
	// The host's own cgroup must hand the controllers down; it cannot while it holds processes,
	// unless it is the root of the hierarchy (v2's rule of no processes in inner nodes).
	if err := os.WriteFile(filepath.Join(base, "cgroup.subtree_control"), []byte(enable), 0); err != nil {
		return nil, fmt.Errorf("enable %s in %s: %w", enable, base, err)
	}
	sweepCgroups(log, base)
	dir := filepath.Join(base, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(enable), 0); err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("enable %s in %s: %w", enable, dir, err)
	}
	return &cgroups{version: 2, controllers: cs, dirs: []string{dir}}, nil
}

func newCgroupsV1(mounts []cgroupMount, own map[string]string, name string, log *slog.Logger) (*cgroups, error) {
	cg := &cgroups{version: 1}
	for _, c := range cgroupControllers {
		i := slices.IndexFunc(mounts, func(m cgroupMount) bool { return slices.Contains(m.controllers, c) })
		if i < 0 {
			if c == "cpu" {
				continue
			}
			return nil, fmt.Errorf("no %s hierarchy is mounted", c)
		}
		base := mounts[i].inMount(own[c])
		dir := filepath.Join(base, name)
		if slices.Contains(cg.dirs, dir) {
			continue // one hierarchy with several controllers
		}
		sweepCgroups(log, base)
		if err := os.Mkdir(dir, 0o755); err != nil {
			cg.remove()
			if c == "cpu" {
				return cg, nil
			}
			return nil, fmt.Errorf("make a %s cgroup: %w", c, err)
		}
		cg.dirs = append(cg.dirs, dir)
		cg.controllers = append(cg.controllers, c)
	}
	return cg, nil
}

// String names the version and controllers: "v1 (memory, pids, cpu)".
func (cg *cgroups) String() string {
	return fmt.Sprintf("v%d (%s)", cg.version, strings.Join(cg.controllers, ", "))
}

// remove removes the host's folders; its plugins' are gone by then.
func (cg *cgroups) remove() {
	for _, d := range cg.dirs {
		_ = os.Remove(d)
	}
}

// pluginCgroup is one plugin process's cgroup: a folder in each of the host's.
type pluginCgroup struct {
	version int
	dirs    []string
}

// plugin makes a cgroup for one plugin process, with the limits set.
func (cg *cgroups) plugin(name string, lim Limits) (*pluginCgroup, error) {
	pc := &pluginCgroup{version: cg.version}
	for _, d := range cg.dirs {
		dir := filepath.Join(d, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			pc.remove()
			return nil, fmt.Errorf("make the plugin's cgroup: %w", err)
		}
		pc.dirs = append(pc.dirs, dir)
	}
	var settings [][2]string
	quota := int64(lim.CPU * 100000)
	if cg.version == 2 {
		if lim.Memory > 0 {
			settings = append(settings, [2]string{"memory.max", strconv.FormatUint(lim.Memory, 10)}, [2]string{"memory.swap.max", "0"})
		}
		if lim.Processes > 0 {
			settings = append(settings, [2]string{"pids.max", strconv.FormatUint(lim.Processes, 10)})
		}
		if quota > 0 && slices.Contains(cg.controllers, "cpu") {
			settings = append(settings, [2]string{"cpu.max", fmt.Sprintf("%d 100000", quota)})
		}
	} else {
		if lim.Memory > 0 {
			settings = append(settings, [2]string{"memory.limit_in_bytes", strconv.FormatUint(lim.Memory, 10)})
		}
		if lim.Processes > 0 {
			settings = append(settings, [2]string{"pids.max", strconv.FormatUint(lim.Processes, 10)})
		}
		if quota > 0 && slices.Contains(cg.controllers, "cpu") {
			settings = append(settings, [2]string{"cpu.cfs_period_us", "100000"}, [2]string{"cpu.cfs_quota_us", strconv.FormatInt(quota, 10)})
		}
	}
	for _, s := range settings {
		if err := pc.set(s[0], s[1]); err != nil {
			if s[0] == "memory.swap.max" {
				continue // no swap accounting: nothing to limit
			}
			pc.remove()
			return nil, err
		}
	}
	return pc, nil
}

// set writes a control file in whichever of the plugin's folders has it.
func (pc *pluginCgroup) set(file, value string) error {
	for _, d := range pc.dirs {
		p := filepath.Join(d, file)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if err := os.WriteFile(p, []byte(value), 0); err != nil {
			return fmt.Errorf("cgroup %s = %s: %w", file, value, err)
		}
		return nil
	}
	return fmt.Errorf("cgroup %s: no such control file", file)
}

// add moves a process into the plugin's cgroup; its children start there.
func (pc *pluginCgroup) add(pid int) error {
	for _, d := range pc.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("move the plugin into its cgroup: %w", err)
		}
	}
	return nil
}

// kill kills every process in the cgroup: at once with cgroup.kill (v2), else one by one until
// none is left (a process may fork while the others die).
func (pc *pluginCgroup) kill() {
	if pc == nil || len(pc.dirs) == 0 {
		return
	}
	if pc.version == 2 {
		if err := os.WriteFile(filepath.Join(pc.dirs[0], "cgroup.kill"), []byte("1"), 0); err == nil {
			return
		}
	}
	for range 100 {
		pids := cgroupProcs(pc.dirs[0])
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func cgroupProcs(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// remove kills what is left in the cgroup and removes its folders, waiting a moment for the
// killed processes to leave it.
func (pc *pluginCgroup) remove() {
	if pc == nil {
		return
	}
	pc.kill()
	deadline := time.Now().Add(2 * time.Second)
	for _, d := range pc.dirs {
		for {
			err := os.Remove(d)
			if err == nil || errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
				break
			}
			pc.kill()
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// sweepCgroups removes the cgroups that hosts which died left in base, killing what runs there.
func sweepCgroups(log *slog.Logger, base string) {
	for _, dir := range deadHostDirs(base) {
		children, _ := os.ReadDir(dir)
		for _, c := range children {
			if c.IsDir() {
				(&pluginCgroup{version: 1, dirs: []string{filepath.Join(dir, c.Name())}}).remove()
			}
		}
		if err := os.Remove(dir); err == nil {
			log.Info("removed the plugin cgroups of a host that died", slog.String("dir", dir))
		}
	}
}
