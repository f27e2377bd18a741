// A gRPC server for bench/grpc.sh: greet.Greeter/SayHello of
// tests/grpc/greet.proto on grpc-go, with no generated code. Every call
// reaches one handler for unknown services, and a codec that passes
// messages through as bytes: the request is read and dropped, the reply
// is one HelloReply encoded once at start. What a call costs here is
// grpc-go's HTTP/2 and framing, so that the generator, not the server, is
// what the benchmark measures.
//
//	grpc-server [-listen 127.0.0.1:PORT]
//
// It prints "listening ADDRESS" once it listens, and stops on SIGTERM or
// SIGINT.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// rawCodec hands messages over as the bytes on the wire.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("raw codec: cannot marshal %T", v)
	}
	return *b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("raw codec: cannot unmarshal into %T", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

// helloReply is HelloReply{message: "hello", seq: 1} in protobuf's wire
// format: field 1 (length-delimited) and field 2 (varint).
var helloReply = []byte{0x0a, 0x05, 'h', 'e', 'l', 'l', 'o', 0x10, 0x01}

func handle(_ any, stream grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(stream)
	if method != "/greet.Greeter/SayHello" {
		return status.Errorf(codes.Unimplemented, "%s is not served here", method)
	}
	var request []byte
	if err := stream.RecvMsg(&request); err != nil {
		return err
	}
	reply := helloReply
	return stream.SendMsg(&reply)
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	// Stream workers and a shared write buffer were tried (h2load
	// posting framed calls, 100 in flight): no change beyond the noise of
	// a shared machine, so grpc-go's defaults.
	server := grpc.NewServer(
		grpc.ForceServerCodec(rawCodec{}),
		grpc.UnknownServiceHandler(handle),
	)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		server.Stop()
	}()
	fmt.Printf("listening %s\n", lis.Addr())
	if err := server.Serve(lis); err != nil {
		log.Fatal(err)
	}
}
