// Command pstest runs Google's in-memory Pub/Sub fake (cloud.google.com/go/pubsub/v2/pstest) as a
// server for the LakeLogic tests and benchmarks. The Node client reaches it through
// PUBSUB_EMULATOR_HOST=127.0.0.1:<port>.
//
// Flags:
//
//	-host, -port          where the gRPC server listens (default 127.0.0.1, 0 = any free port)
//	-min-ack-deadline     lowest ack deadline the fake accepts (default 10s, as the real service)
//	-debug-port           if set, also serve GET /messages on 127.0.0.1 (JSON: id, deliveries, acks,
//	                      orderingKey of every message ever published) so a test can check what
//	                      was acknowledged
//
// It prints "pstest listening on <addr>" (and "debug listening on <addr>") once ready, and stops
// on SIGINT/SIGTERM or when its standard input closes (so a killed parent leaves no server behind).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"cloud.google.com/go/pubsub/v2/pstest"
)

type messageInfo struct {
	ID          string `json:"id"`
	Deliveries  int    `json:"deliveries"`
	Acks        int    `json:"acks"`
	OrderingKey string `json:"orderingKey,omitempty"`
	Topic       string `json:"topic"`
}

func main() {
	host := flag.String("host", "127.0.0.1", "interface to listen on")
	port := flag.Int("port", 0, "gRPC port (0 = any free port)")
	minAck := flag.Duration("min-ack-deadline", 10*time.Second, "lowest ack deadline accepted (>= 1s)")
	debugPort := flag.Int("debug-port", -1, "serve GET /messages on this port (-1 = off, 0 = any free port)")
	watchStdin := flag.Bool("exit-on-stdin-close", false, "stop when standard input closes")
	flag.Parse()

	if *minAck != 10*time.Second {
		pstest.SetMinAckDeadline(*minAck)
	}
	srv := pstest.NewServerWithAddress(fmt.Sprintf("%s:%d", *host, *port))
	fmt.Printf("pstest listening on %s\n", srv.Addr)

	if *debugPort >= 0 {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *debugPort))
		if err != nil {
			log.Fatalf("debug listener: %v", err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/messages", func(w http.ResponseWriter, _ *http.Request) {
			msgs := srv.Messages()
			out := make([]messageInfo, 0, len(msgs))
			for _, m := range msgs {
				out = append(out, messageInfo{ID: m.ID, Deliveries: m.Deliveries, Acks: m.Acks, OrderingKey: m.OrderingKey, Topic: m.Topic})
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(out)
		})
		go func() { _ = http.Serve(ln, mux) }()
		fmt.Printf("debug listening on %s\n", ln.Addr())
	}

	done := make(chan struct{}, 1)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() { <-sig; done <- struct{}{} }()
	if *watchStdin {
		go func() { _, _ = io.Copy(io.Discard, os.Stdin); done <- struct{}{} }()
	}
	<-done
	if err := srv.Close(); err != nil {
		log.Print(err)
	}
}
