package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// scrapeTarget is a setup's page of state series, as a scraper reads it:
// kube-state-metrics' /metrics, or kube-state-push's pull page.
type scrapeTarget struct {
	// url is the page; telemetry the serving process's own metrics
	// (go_memstats_alloc_bytes_total).
	url, telemetry string
	// proc is the serving process's index among the setup's processes.
	proc int
}

// scrapes is how many times each page is read; the median is reported.
const scrapes = 5

// scrapeCost is what one read of the page costs the process serving it,
// median of scrapes reads taken one after the other.
type scrapeCost struct {
	// cpu is the serving process's CPU time during the read; wall the
	// read's duration.
	cpu, wall time.Duration
	// allocated is the bytes the serving process allocated meanwhile
	// (go_memstats_alloc_bytes_total before and after).
	allocated float64
	// body is the page's size (uncompressed: neither side is asked for
	// gzip) and lines its series lines.
	body, lines int64
}

// measureScrape reads t's page scrapes times with a plain text Accept, as
// a Prometheus that does not ask for OpenMetrics does, and returns the
// median cost. pid is the serving process.
func measureScrape(ctx context.Context, t scrapeTarget, pid int, ticksPerSecond float64) (scrapeCost, error) {
	var cpus, walls []time.Duration
	var allocs []float64
	var last scrapeCost
	for range scrapes {
		a0, err := allocatedBytes(ctx, t.telemetry)
		if err != nil {
			return scrapeCost{}, err
		}
		r0, err := readProc(pid)
		if err != nil {
			return scrapeCost{}, err
		}
		start := time.Now()
		body, lines, err := readPage(ctx, t.url)
		if err != nil {
			return scrapeCost{}, err
		}
		wall := time.Since(start)
		r1, err := readProc(pid)
		if err != nil {
			return scrapeCost{}, err
		}
		a1, err := allocatedBytes(ctx, t.telemetry)
		if err != nil {
			return scrapeCost{}, err
		}
		cpus = append(cpus, time.Duration(float64(r1.cpuTicks-r0.cpuTicks)/ticksPerSecond*float64(time.Second)))
		walls = append(walls, wall)
		allocs = append(allocs, a1-a0)
		last.body, last.lines = body, lines
	}
	last.cpu, last.wall, last.allocated = median(cpus), median(walls), median(allocs)
	return last, nil
}

// readPage GETs a page of series and counts its bytes and series lines.
func readPage(ctx context.Context, url string) (body, lines int64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("scraping %s: status %d", url, resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		b := sc.Bytes()
		body += int64(len(b)) + 1
		if len(b) > 0 && b[0] != '#' {
			lines++
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("scraping %s: %w", url, err)
	}
	return body, lines, nil
}

// allocatedBytes reads go_memstats_alloc_bytes_total from a Go program's
// own metrics page.
func allocatedBytes(ctx context.Context, url string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", url, err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "go_memstats_alloc_bytes_total "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("%s has no go_memstats_alloc_bytes_total", url)
}
