package main

// The /proc readers of `bench footprint` (footprint.go): a process' memory
// by kind, its resident bytes by mapping, and the resident pages of its
// binary.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// memory is one process' memory from /proc/<pid>/status, in bytes.
type memory struct {
	hwm, rss, anon, file uint64
}

// readMemory reads VmHWM, VmRSS, RssAnon and RssFile.
func readMemory(pid int) (memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	var m memory
	for line := range strings.SplitSeq(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *uint64
		switch name {
		case "VmHWM":
			dst = &m.hwm
		case "VmRSS":
			dst = &m.rss
		case "RssAnon":
			dst = &m.anon
		case "RssFile":
			dst = &m.file
		default:
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 {
			return memory{}, fmt.Errorf("/proc/%d/status: %s: %q", pid, name, rest)
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("/proc/%d/status: %s: %w", pid, name, err)
		}
		*dst = kb * 1024
	}
	return m, nil
}

// mapping is the resident size of the mappings of one path (or kind).
type mapping struct {
	name string
	rss  uint64
}

// topMappings sums Rss in /proc/<pid>/smaps by path ([heap], [stack] and
// anonymous mappings count as "anonymous") and returns the largest first.
func topMappings(pid int) ([]mapping, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	by := map[string]uint64{}
	cur := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			cur = "anonymous"
			if len(fields) >= 6 {
				cur = filepath.Base(fields[5]) + " " + fields[1]
			}
			continue
		}
		if len(fields) == 3 && fields[0] == "Rss:" {
			kb, err := strconv.ParseUint(fields[1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("smaps: %w", err)
			}
			by[cur] += kb * 1024
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var out []mapping
	for n, r := range by {
		if r > 0 {
			out = append(out, mapping{n, r})
		}
	}
	slices.SortFunc(out, func(a, b mapping) int { return int(b.rss>>10) - int(a.rss>>10) })
	return out, nil
}

// download writes what url answers to path.
func download(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// copyFile copies src (a /proc file) to dst.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// residentPages writes the address of every resident page of the mappings
// of bin in process pid, one hexadecimal address a line, from
// /proc/<pid>/pagemap (bit 63: present). With the symbol table of an
// unstripped build of the same source and flags, they show which
// packages' code and data the process touched.
func residentPages(pid int, bin, path string) error {
	exe, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return err
	}
	pm, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", pid))
	if err != nil {
		return err
	}
	defer pm.Close()
	var b strings.Builder
	page := uint64(os.Getpagesize())
	for line := range strings.SplitSeq(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[5] != exe {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("/proc/%d/maps: %q", pid, f[0])
		}
		n := (end - start) / page
		buf := make([]byte, 8*n)
		if _, err := pm.ReadAt(buf, int64(start/page*8)); err != nil {
			return fmt.Errorf("/proc/%d/pagemap: %w", pid, err)
		}
		for i := range n {
			if buf[8*i+7]&0x80 != 0 {
				fmt.Fprintf(&b, "%x\n", start+i*page)
			}
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
