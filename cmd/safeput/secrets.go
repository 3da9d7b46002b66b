package main

import (
	"os"
	"strings"
)

// readSecrets takes the secret key and session token from --secret-key-file and
// --session-token-file, and warns about either given on the command line, where every user of
// the machine can read it (ps, /proc/PID/cmdline) and the shell's history may keep it. The flags
// keep working: scripts use them. A file's content never appears in an error.
func (a *app) readSecrets() error {
	for _, s := range []struct {
		flag, fileFlag, env string
		value               *string
		file                string
	}{
		{"--secret-key", "--secret-key-file", "AWS_SECRET_ACCESS_KEY", &a.g.secretKey, a.g.secretKeyFile},
		{"--session-token", "--session-token-file", "AWS_SESSION_TOKEN", &a.g.sessionToken, a.g.sessionTokenFile},
	} {
		if *s.value != "" {
			if s.file != "" {
				return usageErr("%s and %s: give one", s.flag, s.fileFlag)
			}
			a.warn(s.flag + " on the command line is visible to every user of this machine (ps, /proc) and may stay in the shell's history; use " +
				s.env + ", " + s.fileFlag + " FILE or a --profile instead")
			continue
		}
		if s.file == "" {
			continue
		}
		b, err := os.ReadFile(s.file)
		if err != nil {
			return usageErr("%s: %v", s.fileFlag, err)
		}
		v := strings.TrimSpace(string(b))
		if v == "" {
			return usageErr("%s %s: the file is empty", s.fileFlag, s.file)
		}
		if strings.ContainsAny(v, "\r\n") {
			return usageErr("%s %s: want the secret alone, on one line", s.fileFlag, s.file)
		}
		*s.value = v
	}
	return nil
}
