package main

// storage format's controller quorum flags, as kafka-storage.sh's (KIP-853):
// with controller.quorum.bootstrap.servers instead of
// controller.quorum.voters, a controller is formatted with one of
//
//	--standalone                 this node alone is the first voter
//	--initial-controllers LIST   id@host:port:directory-id,... are the first voters
//	--no-initial-controllers     an observer, added later by add-controller
//
// The first two write the voters to bootstrap.voters in the metadata log
// dir (the node bootstraps Raft from it when it has no Raft state) and
// finalize kraft.version 1 in the bootstrap records. A node listed in
// --initial-controllers gets its listed directory id as the metadata
// dir's directory.id (KIP-858), so the id names that incarnation of the
// node: a wiped and re-formatted node has a new one.

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/raftfsm"
	"github.com/raftka/raftka/storage"
)

// votersFile holds storage format's initial voters, one
// id@host:port:directory-id a line.
const votersFile = "bootstrap.voters"

// initialController is one --initial-controllers entry.
type initialController struct {
	ID          int32
	Addr        string // host:port
	DirectoryID string
}

func (c initialController) String() string {
	return fmt.Sprintf("%d@%s:%s", c.ID, c.Addr, c.DirectoryID)
}

// parseInitialControllers parses kafka-storage.sh's
// --initial-controllers: id@host:port:directory-id, comma separated.
func parseInitialControllers(s string) ([]initialController, error) {
	var out []initialController
	seen := map[int32]bool{}
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		idStr, rest, ok := strings.Cut(e, "@")
		if !ok {
			return nil, fmt.Errorf("--initial-controllers: %q: want id@host:port:directory-id", e)
		}
		id, err := strconv.ParseInt(idStr, 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("--initial-controllers: %q: bad node id %q", e, idStr)
		}
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			return nil, fmt.Errorf("--initial-controllers: %q: want id@host:port:directory-id", e)
		}
		addr, dir := rest[:i], rest[i+1:]
		host, port, err := net.SplitHostPort(addr)
		if err != nil || host == "" {
			return nil, fmt.Errorf("--initial-controllers: %q: bad host:port %q", e, addr)
		}
		if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
			return nil, fmt.Errorf("--initial-controllers: %q: bad port %q", e, port)
		}
		u, err := storage.ParseUUID(dir)
		if err != nil {
			return nil, fmt.Errorf("--initial-controllers: %q: directory id %q: %v", e, dir, err)
		}
		if seen[int32(id)] {
			return nil, fmt.Errorf("--initial-controllers: node %d is listed twice", id)
		}
		seen[int32(id)] = true
		out = append(out, initialController{ID: int32(id), Addr: addr, DirectoryID: u.String()})
	}
	return out, nil
}

// quorumFormat is what the three flags decided for one node.
type quorumFormat struct {
	voters []initialController // nil: no bootstrap voters
	// dirID is the metadata dir's directory.id ("" for a random one).
	dirID string
}

// planQuorumFormat checks the flags against the config as kafka-storage.sh
// does and decides the voters to write.
func planQuorumFormat(cfg *config.Config, standalone bool, initial string, none bool) (quorumFormat, error) {
	n := 0
	for _, b := range []bool{standalone, initial != "", none} {
		if b {
			n++
		}
	}
	if n > 1 {
		return quorumFormat{}, errors.New("only one of --standalone, --initial-controllers and --no-initial-controllers may be given")
	}
	if len(cfg.Voters) > 0 {
		if n > 0 {
			return quorumFormat{}, errors.New("you cannot use --standalone, --initial-controllers or --no-initial-controllers when controller.quorum.voters is set: to use a dynamic quorum, remove controller.quorum.voters and set controller.quorum.bootstrap.servers")
		}
		return quorumFormat{}, nil
	}
	if !cfg.Roles.Controller {
		if standalone || initial != "" {
			return quorumFormat{}, errors.New("--standalone and --initial-controllers are for controllers; this node has process.roles=broker")
		}
		return quorumFormat{}, nil
	}
	switch {
	case none:
		return quorumFormat{}, nil
	case standalone:
		l, ok := cfg.ControllerListener()
		if !ok {
			return quorumFormat{}, errors.New("--standalone: no controller listener")
		}
		host := l.Host
		if host == "" || host == "0.0.0.0" || host == "::" {
			return quorumFormat{}, fmt.Errorf("--standalone: the controller listener %s has no host other voters can dial", l)
		}
		dir := storage.RandomUUID().String()
		return quorumFormat{voters: []initialController{{ID: cfg.NodeID, Addr: l.Addr(), DirectoryID: dir}}, dirID: dir}, nil
	case initial != "":
		vs, err := parseInitialControllers(initial)
		if err != nil {
			return quorumFormat{}, err
		}
		for _, v := range vs {
			if v.ID == cfg.NodeID {
				return quorumFormat{voters: vs, dirID: v.DirectoryID}, nil
			}
		}
		return quorumFormat{}, fmt.Errorf("--initial-controllers does not list node.id %d: format a controller that joins later with --no-initial-controllers", cfg.NodeID)
	}
	return quorumFormat{}, errors.New("because controller.quorum.voters is not set on this controller, you must give one of --standalone, --initial-controllers or --no-initial-controllers")
}

func writeVoters(dir string, vs []initialController) error {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString(v.String())
		b.WriteByte('\n')
	}
	tmp := filepath.Join(dir, votersFile+".tmp")
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, votersFile))
}

// readVoters returns the initial voters storage format wrote, none if
// there is no file.
func readVoters(dir string) ([]raftfsm.Voter, error) {
	f, err := os.Open(filepath.Join(dir, votersFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []raftfsm.Voter
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		vs, err := parseInitialControllers(line)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, votersFile), err)
		}
		for _, v := range vs {
			out = append(out, raftfsm.Voter{ID: v.ID, Addr: v.Addr})
		}
	}
	return out, sc.Err()
}
