// Command pause is the real-node tests' sandbox image: it holds a Pod's
// namespaces and waits for SIGTERM, like the registry's pause image,
// without a registry.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
