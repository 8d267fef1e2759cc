package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// memory is the summed memory of the browsers' process trees.
type memory struct {
	pss, rss uint64 // bytes
	procs    int
}

// browserMemory sums PSS and RSS over every process of the browsers whose
// leader pids are given: the processes of their process groups (the
// launcher starts each browser as a group leader) and, should a helper
// have left the group, the leaders' descendants.
func browserMemory(leaders []int) (memory, error) {
	var m memory
	if len(leaders) == 0 {
		return m, fmt.Errorf("no browser runs")
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return m, err
	}
	type proc struct{ ppid, pgrp int }
	procs := map[int]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		procs[pid] = proc{ppid, pgrp}
	}
	in := map[int]bool{}
	for _, l := range leaders {
		in[l] = true
	}
	member := func(pid int) bool {
		p := procs[pid]
		if in[p.pgrp] {
			return true
		}
		for seen := 0; pid > 1 && seen < 64; seen++ {
			if in[pid] {
				return true
			}
			pid = procs[pid].ppid
		}
		return false
	}
	for pid := range procs {
		if !member(pid) {
			continue
		}
		pss, err := field(filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup"), "Pss:")
		if err != nil {
			continue // exited, or a zombie without a memory map
		}
		rss, err := field(filepath.Join("/proc", strconv.Itoa(pid), "status"), "VmRSS:")
		if err != nil {
			continue
		}
		m.pss += pss
		m.rss += rss
		m.procs++
	}
	if m.procs == 0 {
		return m, fmt.Errorf("no process of the browsers %v could be read", leaders)
	}
	return m, nil
}

// field reads a "Name:   123 kB" line of a /proc file, in bytes.
func field(path, name string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name)
		if !ok {
			continue
		}
		fs := strings.Fields(rest)
		if len(fs) == 0 {
			break
		}
		kb, err := strconv.ParseUint(fs[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %s: %w", path, name, err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no %s line", path, name)
}
