// Command nullreceiver answers every remote-write request 204 No Content
// after reading its body, and does nothing else: the receiver of the second
// agent scripts/paired-cpu.sh runs beside the benchmark's own.
//
//	nullreceiver 127.0.0.1:19291
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: nullreceiver HOST:PORT")
		os.Exit(2)
	}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	})
	if err := http.ListenAndServe(os.Args[1], nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
