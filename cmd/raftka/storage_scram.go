package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/raftka/raftka/metadata"
)

// bootstrapFile holds the records storage format --add-scram made, in the
// metadata log dir. The controller that finds the metadata log empty
// commits them with the cluster id (Kafka's bootstrap.checkpoint, in
// raftka's record encoding); afterwards the file is no longer read.
const bootstrapFile = "bootstrap.records"

// parseAddScram parses one --add-scram value, as kafka-storage.sh takes it:
//
//	SCRAM-SHA-256=[name=alice,password=alice-secret]
//	SCRAM-SHA-512=[name=bob,password="with,comma",iterations=8192]
//	SCRAM-SHA-256=[name=carol,salt="c2FsdA==",saltedpassword="...",iterations=4096]
//
// salt and saltedpassword are base64; without a salt one is made at random.
func parseAddScram(s string) (*metadata.UserScramCredential, error) {
	mechName, rest, ok := strings.Cut(s, "=")
	if !ok {
		return nil, fmt.Errorf("--add-scram %q: want MECHANISM=[name=...,password=...]", s)
	}
	mech, ok := metadata.ScramMechanismByName(strings.TrimSpace(mechName))
	if !ok {
		return nil, fmt.Errorf("--add-scram: unknown mechanism %q (SCRAM-SHA-256 or SCRAM-SHA-512)", mechName)
	}
	rest = strings.TrimSpace(rest)
	if !strings.HasPrefix(rest, "[") || !strings.HasSuffix(rest, "]") {
		return nil, fmt.Errorf("--add-scram: the credential must be in brackets: %s=[name=...,password=...]", mechName)
	}
	kv, err := parseScramFields(rest[1 : len(rest)-1])
	if err != nil {
		return nil, fmt.Errorf("--add-scram: %w", err)
	}
	name := kv["name"]
	if name == "" {
		return nil, errors.New("--add-scram: name is required")
	}
	iters := int64(metadata.MinScramIterations)
	if v, ok := kv["iterations"]; ok {
		if iters, err = strconv.ParseInt(v, 10, 32); err != nil {
			return nil, fmt.Errorf("--add-scram: iterations %q is not a number", v)
		}
	}
	var salt []byte
	if v, ok := kv["salt"]; ok {
		if salt, err = base64.StdEncoding.DecodeString(v); err != nil {
			return nil, fmt.Errorf("--add-scram: salt is not base64: %v", err)
		}
	} else {
		salt = make([]byte, 32)
		if _, err := rand.Read(salt); err != nil {
			return nil, err
		}
	}
	var salted []byte
	password, hasPassword := kv["password"]
	saltedText, hasSalted := kv["saltedpassword"]
	switch {
	case hasPassword && hasSalted:
		return nil, errors.New("--add-scram: give password or saltedpassword, not both")
	case hasSalted:
		if _, ok := kv["salt"]; !ok {
			return nil, errors.New("--add-scram: saltedpassword needs the salt it was made with")
		}
		if salted, err = base64.StdEncoding.DecodeString(saltedText); err != nil {
			return nil, fmt.Errorf("--add-scram: saltedpassword is not base64: %v", err)
		}
	case hasPassword && password != "":
		if salted, err = metadata.SaltPassword(mech, password, salt, int32(iters)); err != nil {
			return nil, fmt.Errorf("--add-scram: %w", err)
		}
	default:
		return nil, errors.New("--add-scram: password is required")
	}
	for k := range kv {
		switch k {
		case "name", "password", "iterations", "salt", "saltedpassword":
		default:
			return nil, fmt.Errorf("--add-scram: unknown field %q", k)
		}
	}
	rec, err := metadata.NewScramCredential(name, mech, salt, salted, int32(iters))
	if err != nil {
		return nil, fmt.Errorf("--add-scram: %w", err)
	}
	return rec, nil
}

// parseScramFields splits key=value pairs separated by commas; a value may
// be quoted with " to hold commas or brackets.
func parseScramFields(s string) (map[string]string, error) {
	kv := map[string]string{}
	for s = strings.TrimSpace(s); s != ""; {
		k, rest, ok := strings.Cut(s, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if !ok || k == "" {
			return nil, fmt.Errorf("want key=value, got %q", s)
		}
		rest = strings.TrimLeft(rest, " ")
		var v string
		if strings.HasPrefix(rest, `"`) {
			end := strings.Index(rest[1:], `"`)
			if end < 0 {
				return nil, fmt.Errorf("unterminated quote in %s", k)
			}
			v, rest = rest[1:1+end], rest[2+end:]
		} else {
			v, rest, _ = strings.Cut(rest, ",")
			rest = "," + rest
			v = strings.TrimSpace(v)
		}
		if _, dup := kv[k]; dup {
			return nil, fmt.Errorf("%s given twice", k)
		}
		kv[k] = v
		rest = strings.TrimSpace(rest)
		if rest != "" && rest != "," && !strings.HasPrefix(rest, ",") {
			return nil, fmt.Errorf("want ',' after %s", k)
		}
		s = strings.TrimSpace(strings.TrimPrefix(rest, ","))
	}
	return kv, nil
}

// writeBootstrap stores the bootstrap records in dir.
func writeBootstrap(dir string, recs []metadata.Record) error {
	b, err := metadata.EncodeRecords(recs)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(dir, bootstrapFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, bootstrapFile))
}

// readBootstrap returns the bootstrap records in dir, none if there is no
// file.
func readBootstrap(dir string) ([]metadata.Record, error) {
	b, err := os.ReadFile(filepath.Join(dir, bootstrapFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	recs, err := metadata.DecodeRecords(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, bootstrapFile), err)
	}
	return recs, nil
}
