// A WebSocket echo server on gorilla/websocket, for the tests: the shape
// of that library's own echo example, plus a count of what it received
// and sent.
//
//	gorilla-echo -addr 127.0.0.1:PORT -log FILE
//
// /echo sends every message back as it came. As each connection ends the
// server appends "received N sent M close CODE" to FILE.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"sync"

	"github.com/gorilla/websocket"
)

var (
	addr     = flag.String("addr", "127.0.0.1:0", "address to listen on")
	logPath  = flag.String("log", "", "file the counts are appended to")
	upgrader = websocket.Upgrader{}
	logMu    sync.Mutex
)

func note(line string) {
	logMu.Lock()
	defer logMu.Unlock()
	f, err := os.OpenFile(*logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		log.Print(err)
		return
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}

func echo(w http.ResponseWriter, r *http.Request) {
	c, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer c.Close()
	received, sent, code := 0, 0, 1006
	for {
		kind, message, err := c.ReadMessage()
		if err != nil {
			var closed *websocket.CloseError
			if errors.As(err, &closed) {
				code = closed.Code
			}
			break
		}
		received++
		if err := c.WriteMessage(kind, message); err != nil {
			break
		}
		sent++
	}
	note(fmt.Sprintf("received %d sent %d close %d", received, sent, code))
}

func main() {
	flag.Parse()
	http.HandleFunc("/echo", echo)
	log.Fatal(http.ListenAndServe(*addr, nil))
}
