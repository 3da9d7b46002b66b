package writer_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/awss3"
	"github.com/safeput/safeput/store/miniogo"
	"github.com/safeput/safeput/storetest/echostore"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/writer"
)

// TestSecretsNeverPrinted: a store that echoes every request header into its error message
// (echostore) is written to through both adapters, with static keys and with keys from a
// credentials provider, with an SSE-C key, at debug level. No output the library produces (the
// error, its %+v, every log line of the Logger option and of the retry policy's logger, the
// Observer's errors) carries the secret key, the session token, the SSE-C key (raw or base64)
// or a request signature, although the store quoted all of them, bare and as headers.
func TestSecretsNeverPrinted(t *testing.T) {
	sseKey := s3test.RandomBytes(store.CustomerKeySize)
	for _, backend := range []string{"aws", "minio"} {
		for _, provided := range []bool{false, true} {
			name := backend + "/static"
			if provided {
				name = backend + "/provider"
			}
			t.Run(name, func(t *testing.T) {
				// Values of this run alone: each is redacted because this run's store learnt it.
				secretKey := "wJalrXUtnFEMI/K7MDENG/" + strings.ReplaceAll(name, "/", "-") + "-Zq9SECRETkey"
				token := "IQoJb3JpZ2luX2VjEJr//////////" + strings.ReplaceAll(name, "/", "-") + "-Zq9TOKENvalue+/="
				srv := echostore.Start(t, secretKey)
				st := echoStore(t, backend, provided, srv, secretKey, token)
				var logs bytes.Buffer
				log := jsonLogger(&logs)
				var seen []string
				var mu sync.Mutex
				opts := func(o *writer.Options) {
					o.Logger = log
					o.Retry = retry.New(func(o *retry.Options) {
						o.Logger, o.InitialInterval, o.MaxInterval = log, time.Millisecond, time.Millisecond
					})
					o.Encryption = store.Encryption{Type: store.SSEC, CustomerKey: sseKey}
					o.PartSize = 5 << 20
					o.Observer = func(e writer.Event) {
						if e.Err != nil {
							mu.Lock()
							seen = append(seen, e.Err.Error(), fmt.Sprintf("%+v", e.Err))
							mu.Unlock()
						}
					}
				}
				var out strings.Builder
				for _, size := range []int{1000, 6 << 20} { // a single PUT, a multipart upload
					_, err := writer.Upload(context.Background(), st, "bucket", fmt.Sprintf("k%d", size), bytes.NewReader(s3test.RandomBytes(size)), opts)
					if err == nil {
						t.Fatal("a write to a store that refuses everything succeeded")
					}
					fmt.Fprintf(&out, "%s\n%+v\n%v\n", err.Error(), err, err)
				}
				mu.Lock()
				out.WriteString(strings.Join(seen, "\n"))
				mu.Unlock()
				out.WriteString(logs.String())
				all := out.String()
				checkNoSecret(t, all, append([]string{secretKey, token, base64.StdEncoding.EncodeToString(sseKey), string(sseKey)}, srv.Signatures()...))
				// The store's echo reached the outputs, redacted: the extra secret, then the bare
				// values of the SSE-C key, its algorithm and the session token; and (the aws SDK keeps
				// the whole message) the headers.
				echoed := strings.Contains(all, "Also: REDACTED Values: ") && strings.Contains(all, "REDACTED AES256 REDACTED")
				if backend == "aws" {
					echoed = echoed && strings.Contains(all, "Server-Side-Encryption-Customer-Key: REDACTED") && strings.Contains(all, "Security-Token: REDACTED")
				}
				if !echoed {
					t.Fatalf("the store's echo of the secrets is not in the output; the test shows nothing:\n%s", all)
				}
				if !strings.Contains(logs.String(), `"level":"debug"`) || !strings.Contains(logs.String(), `"msg":"retrying"`) {
					t.Errorf("no debug or retry line logged:\n%s", logs.String())
				}
				if len(srv.Signatures()) == 0 {
					t.Error("no signed request reached the store")
				}
			})
		}
	}
}

// echoStore is the adapter for backend pointed at srv, with static keys or with keys a
// credentials provider hands out.
func echoStore(t *testing.T, backend string, provided bool, srv *echostore.Server, secretKey, token string) store.Store {
	t.Helper()
	const accessKey = "AKIAIOSFODNN7EXAMPLE"
	var st store.Store
	var err error
	switch backend {
	case "aws":
		cfg := awss3.Config{Endpoint: srv.URL, PathStyle: true, CABundle: srv.CABundle}
		if provided {
			cfg.Credentials = aws.NewCredentialsCache(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
				return aws.Credentials{AccessKeyID: accessKey, SecretAccessKey: secretKey, SessionToken: token}, nil
			}))
		} else {
			cfg.AccessKey, cfg.SecretKey, cfg.SessionToken = accessKey, secretKey, token
		}
		st, err = awss3.New(cfg)
	default:
		cfg := miniogo.Config{Endpoint: srv.URL, PathStyle: true, CABundle: srv.CABundle}
		if provided {
			cfg.Credentials = miniocreds.New(&miniocreds.Static{Value: miniocreds.Value{
				AccessKeyID: accessKey, SecretAccessKey: secretKey, SessionToken: token, SignerType: miniocreds.SignatureV4}})
		} else {
			cfg.AccessKey, cfg.SecretKey, cfg.SessionToken = accessKey, secretKey, token
		}
		st, err = miniogo.New(cfg)
	}
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// jsonLogger logs everything, as a production JSON logger would write it (writerFunc: fence_test.go).
func jsonLogger(w *bytes.Buffer) *zap.Logger {
	var mu sync.Mutex
	sink := zapcore.AddSync(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return w.Write(p)
	}))
	return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), sink, zap.DebugLevel), zap.AddCaller())
}

// checkNoSecret fails t if out holds any secret, or any 16 bytes of one in a row (a secret cut
// short by a length limit still leaks).
func checkNoSecret(t *testing.T, out string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		for i := 0; i+16 <= len(s) || i == 0; i++ {
			part := s[i:min(len(s), i+16)]
			if strings.Contains(out, part) {
				t.Errorf("%q (of the secret %q) is in the output:\n%s", part, s, out)
				break
			}
		}
	}
}
