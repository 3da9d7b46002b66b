package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/safeput/safeput/storetest/s3test"
)

// On an EC2 host (or EKS node) with an instance role and nothing else configured, the CLI signs
// with the role's keys from the instance metadata service (IMDSv2, here an emulator reached
// through AWS_EC2_METADATA_SERVICE_ENDPOINT handing out the server's keys for 3 s), renews them
// when a stream outlasts them, and takes the instance's region; AWS_EC2_METADATA_DISABLED=true
// keeps it from asking at all.
func TestInstanceRoleCredentials(t *testing.T) { s3test.ForEach(t, testInstanceRoleCredentials) }

func testInstanceRoleCredentials(t *testing.T, s s3test.Server) {
	bucket := s3test.NewBucket(t, s)
	var requests, fetches, untokened atomic.Int32
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.Method == http.MethodPut && r.URL.Path == "/latest/api/token" {
			w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
			_, _ = io.WriteString(w, "tok")
			return
		}
		if r.Header.Get("X-Aws-Ec2-Metadata-Token") != "tok" {
			untokened.Add(1)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/latest/meta-data/iam/security-credentials/":
			_, _ = io.WriteString(w, "role\n")
		case "/latest/meta-data/iam/security-credentials/role":
			fetches.Add(1)
			_ = json.NewEncoder(w).Encode(map[string]string{"Code": "Success", "AccessKeyId": s.AccessKey, "SecretAccessKey": s.SecretKey,
				"Expiration": time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339)})
		case "/latest/dynamic/instance-identity/document":
			_ = json.NewEncoder(w).Encode(map[string]string{"region": s.Region})
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer imds.Close()
	env := append(cleanEnv(), "AWS_ENDPOINT_URL="+s.Endpoint, "AWS_EC2_METADATA_SERVICE_ENDPOINT="+imds.URL, "AWS_EC2_METADATA_DISABLED=")
	data := s3test.RandomBytes(1000)
	for _, backend := range []string{"aws", "minio"} {
		key := "instance-role-" + backend
		before := fetches.Load()
		r := runWith(t, env, &trickle{data: data, chunks: 4, pause: time.Second}, "--path-style", "--backend", backend, "put", "-", "s3://"+bucket+"/"+key)
		expectCode(t, r, 0, "put with an instance role ("+backend+")")
		if got := s3test.ReadAll(t, s, bucket, key); !bytes.Equal(got, data) {
			t.Fatalf("%s: read back differs", key)
		}
		if n := fetches.Load() - before; n < 2 {
			t.Errorf("%s: %d fetches of the role's keys for a put longer than their life, want them renewed (2 or more)", key, n)
		}
	}
	if n := untokened.Load(); n != 0 {
		t.Errorf("%d metadata requests without an IMDSv2 token", n)
	}
	n := requests.Load()
	r := runWith(t, append(env, "AWS_EC2_METADATA_DISABLED=true"), nil, "--path-style", "put", writeFile(t, data), "s3://"+bucket+"/disabled")
	expectCode(t, r, 2, "put with the instance metadata service disabled")
	if !strings.Contains(r.stderr, "AWS_EC2_METADATA_DISABLED") || requests.Load() != n {
		t.Errorf("IMDS disabled: stderr %q, %d requests to it; want the source named and none", r.stderr, requests.Load()-n)
	}
}
