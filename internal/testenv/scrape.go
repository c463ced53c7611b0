package testenv

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
)

// Scraped is one answer of a /metrics endpoint.
type Scraped struct {
	// Body is the text, decompressed if it came gzipped.
	Body string
	// ContentType and ContentEncoding are the answer's headers.
	ContentType, ContentEncoding string
}

// ScrapeWith GETs url with the given request headers (Accept,
// Accept-Encoding, ...) and returns the body, gunzipped when the answer
// says gzip.
func ScrapeWith(ctx context.Context, url string, header map[string]string) (Scraped, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Scraped{}, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	// A transport of its own: the default one would ask for gzip and
	// decompress behind our back, hiding what the server sent.
	resp, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
	if err != nil {
		return Scraped{}, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Scraped{}, fmt.Errorf("scraping %s: status %d", url, resp.StatusCode)
	}
	s := Scraped{ContentType: resp.Header.Get("Content-Type"), ContentEncoding: resp.Header.Get("Content-Encoding")}
	var r io.Reader = resp.Body
	if s.ContentEncoding == "gzip" {
		gz, err := gzip.NewReader(resp.Body)
		if err != nil {
			return Scraped{}, fmt.Errorf("scraping %s: %w", url, err)
		}
		defer gz.Close()
		r = gz
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return Scraped{}, fmt.Errorf("scraping %s: %w", url, err)
	}
	s.Body = string(b)
	return s, nil
}
