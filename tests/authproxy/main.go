// Command authproxy is a test peer: a TLS gRPC endpoint that checks the
// bearer token of every call, the way Pub/Sub does, and forwards accepted
// calls to an emulator (plaintext, no auth). It stands in for
// pubsub.googleapis.com in the credentials tests (tests/test_credentials.py).
//
// It makes its own CA and a certificate for 127.0.0.1 and localhost, and
// writes the CA to --ca-out for the client to trust (SSL_CERT_FILE).
// Accepted: a self-signed JWT (what Google's clients send for a
// service-account key) signed by the key in --public-key with
// iss = sub = --email, not expired; or one of --tokens (access tokens
// handed out by the test's token server). Rejections never echo the token.
//
// Prints "listening on HOST:PORT" first, then one line per rejected call.
package main

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	upstream := flag.String("upstream", "", "emulator host:port")
	caOut := flag.String("ca-out", "", "where to write the CA certificate (PEM)")
	pubKey := flag.String("public-key", "", "PEM public key of the service account (self-signed JWTs)")
	email := flag.String("email", "", "the service account's email (iss and sub of its JWTs)")
	tokens := flag.String("tokens", "", "comma-separated access tokens also accepted")
	flag.Parse()
	if *upstream == "" || *caOut == "" {
		log.Fatal("authproxy: --upstream and --ca-out are required")
	}
	cert, err := makeCerts(*caOut)
	if err != nil {
		log.Fatal(err)
	}
	chk := &checker{email: *email}
	if *tokens != "" {
		chk.tokens = strings.Split(*tokens, ",")
	}
	if *pubKey != "" {
		if chk.key, err = readPublicKey(*pubKey); err != nil {
			log.Fatal(err)
		}
	}
	up, err := grpc.NewClient(*upstream, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	lis, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})),
		grpc.ForceServerCodec(rawCodec{}),
		grpc.UnknownServiceHandler(forward(up, chk)),
	)
	fmt.Printf("listening on %s\n", lis.Addr())
	os.Stdout.Sync()
	log.SetOutput(os.Stdout)
	log.SetFlags(0)
	if err := srv.Serve(lis); err != nil {
		log.Fatal(err)
	}
}

// checker decides whether a call's authorization header is acceptable.
type checker struct {
	email    string
	key      *rsa.PublicKey
	tokens   []string
	accepted atomic.Int64
}

func (c *checker) check(md metadata.MD) error {
	h := md.Get("authorization")
	if len(h) != 1 || !strings.HasPrefix(h[0], "Bearer ") {
		return errors.New("missing bearer token")
	}
	tok := strings.TrimPrefix(h[0], "Bearer ")
	if slices.Contains(c.tokens, tok) {
		return nil
	}
	if strings.Count(tok, ".") == 2 && c.key != nil {
		return c.checkJWT(tok)
	}
	return errors.New("unknown access token")
}

func (c *checker) checkJWT(tok string) error {
	parts := strings.Split(tok, ".")
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return errors.New("malformed JWT signature")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(c.key, crypto.SHA256, sum[:], sig) != nil {
		return errors.New("JWT signature does not verify with the service account's key")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return errors.New("malformed JWT claims")
	}
	var cl struct {
		Iss, Sub string
		Exp      int64
	}
	if json.Unmarshal(raw, &cl) != nil {
		return errors.New("malformed JWT claims")
	}
	if cl.Iss != c.email || cl.Sub != c.email {
		return fmt.Errorf("JWT issued by %q, expected %q", cl.Iss, c.email)
	}
	if time.Unix(cl.Exp, 0).Before(time.Now()) {
		return errors.New("JWT expired")
	}
	return nil
}

// forward relays any method to up after the token check, bytes as they are.
func forward(up *grpc.ClientConn, chk *checker) grpc.StreamHandler {
	return func(_ any, ss grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(ss)
		md, _ := metadata.FromIncomingContext(ss.Context())
		if err := chk.check(md); err != nil {
			log.Printf("rejected %s: %v", method, err)
			return status.Errorf(codes.Unauthenticated, "request had invalid authentication credentials: %v", err)
		}
		chk.accepted.Add(1)
		out := md.Copy()
		out.Delete("authorization")
		ctx, cancel := context.WithCancel(metadata.NewOutgoingContext(ss.Context(), out))
		defer cancel()
		cs, err := up.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method, grpc.ForceCodec(rawCodec{}))
		if err != nil {
			return err
		}
		go func() {
			for {
				var m []byte
				if err := ss.RecvMsg(&m); err != nil {
					cs.CloseSend()
					return
				}
				if cs.SendMsg(&m) != nil {
					return
				}
			}
		}()
		first := true
		for {
			var m []byte
			err := cs.RecvMsg(&m)
			if first {
				if h, herr := cs.Header(); herr == nil {
					ss.SendHeader(h)
				}
				first = false
			}
			if err != nil {
				ss.SetTrailer(cs.Trailer())
				if err == io.EOF {
					return nil
				}
				return err
			}
			if err := ss.SendMsg(&m); err != nil {
				return err
			}
		}
	}
}

// rawCodec passes message bytes through unparsed.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

func readPublicKey(path string) (*rsa.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("%s: no PEM block", path)
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return nil, err
	}
	rk, ok := k.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("%s: not an RSA key", path)
	}
	return rk, nil
}

// makeCerts creates a CA (written to caOut) and a server certificate it signs.
func makeCerts(caOut string) (tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pubsub-go test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := os.WriteFile(caOut, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		return tls.Certificate{}, err
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return tls.Certificate{}, err
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: srvKey}, nil
}
