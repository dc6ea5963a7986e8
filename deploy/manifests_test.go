package deploy_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/storage"
	"gopkg.in/yaml.v3"
)

// These tests hold the deployment files to what raftka and each other
// expect, without Docker or Kubernetes: every shipped server.properties must
// load without errors or warnings through the server's own config code, with
// the overrides the compose file or the StatefulSet adds, and the names,
// ports, users and timeouts that appear in several files must agree.

const (
	// imageUID is the numeric user the Dockerfile runs as; Kubernetes'
	// runAsUser and fsGroup must match it for the volume to be writable.
	imageUID = 65532
	// graceMargin is what a stop deadline must leave beyond
	// --shutdown-timeout for closing logs and Raft after the controlled
	// shutdown.
	graceMargin = 10 * time.Second
)

// yamlDocs decodes every document of a YAML file into generic values.
func yamlDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if doc == nil {
			t.Fatalf("%s: empty YAML document", path)
		}
		docs = append(docs, doc)
	}
	if len(docs) == 0 {
		t.Fatalf("%s: no YAML documents", path)
	}
	return docs
}

// at walks v by map keys (string) and list indexes (int) and fails the test,
// naming the path, when a step is missing or of the wrong kind.
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for i, step := range path {
		switch s := step.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%v: not a mapping", path[:i])
			}
			if v, ok = m[s]; !ok {
				t.Fatalf("%v: missing", path[:i+1])
			}
		case int:
			l, ok := v.([]any)
			if !ok || s >= len(l) {
				t.Fatalf("%v: not a list with index %d", path[:i], s)
			}
			v = l[s]
		default:
			panic(fmt.Sprintf("path step %T", step))
		}
	}
	return v
}

func str(t *testing.T, v any, path ...any) string {
	t.Helper()
	s, ok := at(t, v, path...).(string)
	if !ok {
		t.Fatalf("%v: not a string", path)
	}
	return s
}

func num(t *testing.T, v any, path ...any) int {
	t.Helper()
	n, ok := at(t, v, path...).(int)
	if !ok {
		t.Fatalf("%v: not an integer", path)
	}
	return n
}

func list(t *testing.T, v any, path ...any) []any {
	t.Helper()
	l, ok := at(t, v, path...).([]any)
	if !ok {
		t.Fatalf("%v: not a list", path)
	}
	return l
}

func strs(t *testing.T, v any, path ...any) []string {
	t.Helper()
	var out []string
	for i := range list(t, v, path...) {
		out = append(out, str(t, v, append(slices.Clone(path), i)...))
	}
	return out
}

func mapping(t *testing.T, v any, path ...any) map[string]any {
	t.Helper()
	m, ok := at(t, v, path...).(map[string]any)
	if !ok {
		t.Fatalf("%v: not a mapping", path)
	}
	return m
}

// flagValue returns the value of --name in args, given as "--name value" or
// "--name=value"; ok is false when the flag is absent.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
		if a == name && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// flagValues is flagValue for a repeatable flag.
func flagValues(args []string, name string) []string {
	var out []string
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			out = append(out, v)
		} else if a == name && i+1 < len(args) {
			out = append(out, args[i+1])
		}
	}
	return out
}

var composeVar = regexp.MustCompile(`\$\{([A-Z0-9_]+):-([^}]*)\}`)

// withDefaults replaces compose's ${VAR:-default} by its default, what
// compose does when the environment leaves VAR unset. Any other use of $
// fails the test, so a form this does not understand is not checked by
// accident.
func withDefaults(t *testing.T, s string) string {
	t.Helper()
	out := composeVar.ReplaceAllString(s, "$2")
	if strings.Contains(out, "$") {
		t.Fatalf("%q: only ${VAR:-default} interpolation is expected", s)
	}
	return out
}

// composeDefaultVar returns the variable and default of the one
// ${VAR:-default} in s.
func composeDefaultVar(t *testing.T, s string) (name, def string) {
	t.Helper()
	m := composeVar.FindAllStringSubmatch(s, -1)
	if len(m) != 1 {
		t.Fatalf("%q: want exactly one ${VAR:-default}", s)
	}
	return m[0][1], m[0][2]
}

func loadConfig(t *testing.T, path string, data []byte, overrides []string) *config.Config {
	t.Helper()
	cfg, warnings, err := config.Parse(data, overrides)
	if err != nil {
		t.Fatalf("%s with overrides %q: %v", path, overrides, err)
	}
	if len(warnings) > 0 {
		t.Errorf("%s: warnings %q", path, warnings)
	}
	return cfg
}

func duration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("duration %q: %v", s, err)
	}
	return d
}

func hostPort(t *testing.T, s string) (string, int) {
	t.Helper()
	i := strings.LastIndex(s, ":")
	if i < 0 {
		t.Fatalf("%q: not host:port", s)
	}
	p, err := strconv.Atoi(s[i+1:])
	if err != nil {
		t.Fatalf("%q: port: %v", s, err)
	}
	return s[:i], p
}

func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		instr, rest, _ := strings.Cut(line, " ")
		got[strings.ToUpper(instr)] = append(got[strings.ToUpper(instr)], strings.TrimSpace(rest))
	}
	want := map[string][]string{
		"FROM":       {"scratch"},
		"USER":       {fmt.Sprintf("%d:%d", imageUID, imageUID)},
		"VOLUME":     {`["/data"]`},
		"EXPOSE":     {"9092 9093 9100"},
		"ENTRYPOINT": {`["/raftka"]`},
	}
	for instr, w := range want {
		if !slices.Equal(got[instr], w) {
			t.Errorf("%s: got %q, want %q", instr, got[instr], w)
		}
	}
	// The data dir must be owned by the runtime user in the image, or a
	// fresh named volume is root's and the node cannot format it.
	if !slices.Contains(got["COPY"], fmt.Sprintf("--chown=%d:%d data/ /data/", imageUID, imageUID)) {
		t.Errorf("COPY lines %q: want /data owned by %d", got["COPY"], imageUID)
	}
}

func TestComposeCluster(t *testing.T) {
	doc := yamlDocs(t, "docker-compose.yml")[0]
	services := mapping(t, doc, "services")
	volumes := mapping(t, doc, "volumes")
	var clusterIDs, dataVolumes []string
	hostPorts := map[string]string{}
	for n := 1; n <= 3; n++ {
		name := fmt.Sprintf("raftka-%d", n)
		formatName := name + "-format"
		srv := mapping(t, services, name)
		format := mapping(t, services, formatName)

		if got := str(t, srv, "hostname"); got != name {
			t.Errorf("%s: hostname %q", name, got)
		}
		if got := str(t, srv, "depends_on", formatName, "condition"); got != "service_completed_successfully" {
			t.Errorf("%s: depends on %s with condition %q", name, formatName, got)
		}
		args := strs(t, srv, "command")
		fargs := strs(t, format, "command")
		if args[0] != "server" || !slices.Equal(fargs[:2], []string{"storage", "format"}) || !slices.Contains(fargs, "--ignore-formatted") {
			t.Errorf("%s: command %q, format command %q", name, args, fargs)
		}
		cfgPath, _ := flagValue(args, "--config")
		if fpath, _ := flagValue(fargs, "--config"); fpath != cfgPath || cfgPath != fmt.Sprintf("/etc/raftka/server-%d.properties", n) {
			t.Errorf("%s: server config %q, format config %q", name, cfgPath, fpath)
		}
		id, _ := flagValue(fargs, "--cluster-id")
		clusterIDs = append(clusterIDs, id)

		vols := strs(t, srv, "volumes")
		if fv := strs(t, format, "volumes"); !slices.Equal(vols, fv) || len(vols) != 1 || !strings.HasSuffix(vols[0], ":/data") {
			t.Errorf("%s: volumes %q, format volumes %q: want the same one volume at /data", name, vols, fv)
		}
		vol := strings.TrimSuffix(vols[0], ":/data")
		if _, ok := volumes[vol]; !ok {
			t.Errorf("%s: volume %q is not declared", name, vol)
		}
		dataVolumes = append(dataVolumes, vol)

		// Published on loopback only, to the client and metrics ports.
		containerPorts := map[string]string{}
		for _, p := range strs(t, srv, "ports") {
			// 127.0.0.1:HOST:CONTAINER, where HOST is ${VAR:-default}.
			rest, ok := strings.CutPrefix(p, "127.0.0.1:")
			i := strings.LastIndex(rest, ":")
			if !ok || i < 0 {
				t.Errorf("%s: port %q is not published on 127.0.0.1 only", name, p)
				continue
			}
			host, container := rest[:i], rest[i+1:]
			containerPorts[container] = host
			if other, dup := hostPorts[withDefaults(t, host)]; dup {
				t.Errorf("%s: host port %s is also used by %s", name, host, other)
			}
			hostPorts[withDefaults(t, host)] = name
		}
		clientVar, clientPort := composeDefaultVar(t, containerPorts["9092"])
		if clientVar != fmt.Sprintf("RAFTKA_PORT_%d", n) {
			t.Errorf("%s: client port variable %s", name, clientVar)
		}
		if _, ok := containerPorts["9100"]; !ok {
			t.Errorf("%s: metrics port 9100 is not published", name)
		}

		grace := duration(t, str(t, srv, "stop_grace_period"))
		timeout, _ := flagValue(args, "--shutdown-timeout")
		if grace < duration(t, timeout)+graceMargin {
			t.Errorf("%s: stop_grace_period %v leaves no room after --shutdown-timeout %s", name, grace, timeout)
		}

		// The file and the server's overrides must load, name this node,
		// and advertise what compose publishes.
		path := filepath.Join("config", fmt.Sprintf("server-%d.properties", n))
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		plain := loadConfig(t, path, data, nil)
		var overrides []string
		for _, o := range flagValues(args, "--override") {
			overrides = append(overrides, withDefaults(t, o))
		}
		cfg := loadConfig(t, path, data, overrides)
		if fov := flagValues(fargs, "--override"); len(fov) > 0 {
			t.Errorf("%s: format overrides %q would format a different node than the server runs", name, fov)
		}
		checkComposeNode(t, name, n, cfg, clientPort)
		if !slices.Equal(plain.AdvertisedListeners, cfg.AdvertisedListeners) {
			t.Errorf("%s: the file advertises %v, compose with default ports %v; keep them equal", name, plain.AdvertisedListeners, cfg.AdvertisedListeners)
		}
	}
	for _, id := range clusterIDs {
		if id != clusterIDs[0] {
			t.Errorf("format services use different cluster ids %q", clusterIDs)
		}
	}
	if _, err := storage.ParseUUID(withDefaults(t, clusterIDs[0])); err != nil {
		t.Errorf("default cluster id %q: %v", clusterIDs[0], err)
	}
	slices.Sort(dataVolumes)
	if len(slices.Compact(dataVolumes)) != 3 {
		t.Errorf("nodes share data volumes: %q", dataVolumes)
	}
}

func checkComposeNode(t *testing.T, name string, n int, cfg *config.Config, clientPort string) {
	t.Helper()
	if cfg.NodeID != int32(n) || !cfg.Roles.Broker || !cfg.Roles.Controller {
		t.Errorf("%s: node.id %d roles %v", name, cfg.NodeID, cfg.Roles)
	}
	if len(cfg.Voters) != 3 {
		t.Errorf("%s: voters %v", name, cfg.Voters)
	}
	for _, v := range cfg.Voters {
		if v.Host != fmt.Sprintf("raftka-%d", v.ID) || v.Port != 9093 {
			t.Errorf("%s: voter %v: want raftka-<id>:9093, the compose service names", name, v)
		}
	}
	if cfg.DefaultReplicationFactor != 3 || cfg.MinInsyncReplicas != 2 || cfg.OffsetsTopicReplicationFactor != 3 {
		t.Errorf("%s: replication factor %d, min.insync.replicas %d, offsets RF %d", name, cfg.DefaultReplicationFactor, cfg.MinInsyncReplicas, cfg.OffsetsTopicReplicationFactor)
	}
	if cfg.InterBrokerListenerName != "INTERNAL" {
		t.Errorf("%s: inter-broker listener %q", name, cfg.InterBrokerListenerName)
	}
	bound := map[string]config.Listener{}
	for _, l := range cfg.Listeners {
		if l.Host != "0.0.0.0" {
			t.Errorf("%s: listener %v does not listen on every interface of the container", name, l)
		}
		bound[l.Name] = l
	}
	if bound["EXTERNAL"].Port != 9092 || bound["CONTROLLER"].Port != 9093 {
		t.Errorf("%s: listeners %v: compose publishes container port 9092 as EXTERNAL and dials 9093 for Raft", name, cfg.Listeners)
	}
	adv := map[string]string{}
	for _, l := range cfg.AdvertisedListeners {
		adv[l.Name] = l.Addr()
	}
	wantAdv := map[string]string{
		"EXTERNAL": "127.0.0.1:" + clientPort,
		"INTERNAL": fmt.Sprintf("%s:%d", name, bound["INTERNAL"].Port),
	}
	if fmt.Sprint(adv) != fmt.Sprint(wantAdv) {
		t.Errorf("%s: advertised %v, want %v", name, adv, wantAdv)
	}
	if _, p := hostPort(t, cfg.MetricsListener); p != 9100 {
		t.Errorf("%s: metrics.listener %q, compose publishes 9100", name, cfg.MetricsListener)
	}
	for _, d := range cfg.AllDirs() {
		if !strings.HasPrefix(d, "/data/") {
			t.Errorf("%s: directory %s is outside the /data volume", name, d)
		}
	}
}

// k8sObjects indexes every manifest under k8s/ by kind/name and checks
// kustomization.yaml lists every file.
func k8sObjects(t *testing.T) map[string]map[string]any {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("k8s", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("k8s/*.yaml: %v %v", files, err)
	}
	objs := map[string]map[string]any{}
	var listed []string
	var resources []string
	for _, f := range files {
		for _, doc := range yamlDocs(t, f) {
			kind := str(t, doc, "kind")
			if kind == "Kustomization" {
				resources = strs(t, doc, "resources")
				continue
			}
			key := kind + "/" + str(t, doc, "metadata", "name")
			if _, dup := objs[key]; dup {
				t.Errorf("%s is defined twice", key)
			}
			objs[key] = doc
		}
		if filepath.Base(f) != "kustomization.yaml" {
			listed = append(listed, filepath.Base(f))
		}
	}
	slices.Sort(resources)
	if !slices.Equal(resources, listed) {
		t.Errorf("kustomization resources %q, files %q", resources, listed)
	}
	return objs
}

func object(t *testing.T, objs map[string]map[string]any, key string) map[string]any {
	t.Helper()
	o, ok := objs[key]
	if !ok {
		t.Fatalf("no %s among the manifests", key)
	}
	return o
}

// selects reports whether every label of sel is in labels.
func selects(t *testing.T, sel, labels map[string]any) bool {
	t.Helper()
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

var k8sVarRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand does what the kubelet does to $(VAR) in args, failing the test on
// a reference to a variable the container does not define (the kubelet would
// pass it through literally).
func expand(t *testing.T, who, arg string, vars map[string]string) string {
	t.Helper()
	return k8sVarRef.ReplaceAllStringFunc(arg, func(ref string) string {
		name := k8sVarRef.FindStringSubmatch(ref)[1]
		v, ok := vars[name]
		if !ok {
			t.Errorf("%s: %s refers to $(%s), which its env does not define", who, arg, name)
		}
		return v
	})
}

func TestKubernetesManifests(t *testing.T) {
	objs := k8sObjects(t)
	sts := object(t, objs, "StatefulSet/raftka")
	cm := object(t, objs, "ConfigMap/raftka-config")
	headlessName := str(t, sts, "spec", "serviceName")
	headless := object(t, objs, "Service/"+headlessName)
	client := object(t, objs, "Service/raftka")
	pdb := object(t, objs, "PodDisruptionBudget/raftka")

	replicas := num(t, sts, "spec", "replicas")
	if replicas != 3 || str(t, sts, "spec", "podManagementPolicy") != "Parallel" {
		t.Errorf("replicas %d, podManagementPolicy %q", replicas, str(t, sts, "spec", "podManagementPolicy"))
	}
	if str(t, headless, "spec", "clusterIP") != "None" || at(t, headless, "spec", "publishNotReadyAddresses") != true {
		t.Errorf("%s: want clusterIP None and publishNotReadyAddresses: the quorum needs peer names before any pod is ready", headlessName)
	}
	podLabels := mapping(t, sts, "spec", "template", "metadata", "labels")
	for who, sel := range map[string]map[string]any{
		"statefulset selector":     mapping(t, sts, "spec", "selector", "matchLabels"),
		headlessName + " selector": mapping(t, headless, "spec", "selector"),
		"raftka service selector":  mapping(t, client, "spec", "selector"),
		"pdb selector":             mapping(t, pdb, "spec", "selector", "matchLabels"),
	} {
		if !selects(t, sel, podLabels) {
			t.Errorf("%s %v does not select the pods (labels %v)", who, sel, podLabels)
		}
	}
	if num(t, pdb, "spec", "maxUnavailable") != 1 {
		t.Errorf("pdb maxUnavailable %v", at(t, pdb, "spec", "maxUnavailable"))
	}

	pod := mapping(t, sts, "spec", "template", "spec")
	for _, k := range []string{"runAsUser", "runAsGroup", "fsGroup"} {
		if num(t, pod, "securityContext", k) != imageUID {
			t.Errorf("securityContext.%s %v, the image runs as %d", k, at(t, pod, "securityContext", k), imageUID)
		}
	}

	// Volumes: the config volume is the ConfigMap; the data volume is the
	// claim template.
	cmData := mapping(t, cm, "data")
	configFiles := map[string]string{} // volume name -> ConfigMap name
	for i := range list(t, pod, "volumes") {
		if _, ok := mapping(t, pod, "volumes", i)["configMap"]; ok {
			configFiles[str(t, pod, "volumes", i, "name")] = str(t, pod, "volumes", i, "configMap", "name")
			for j := range list(t, pod, "volumes", i, "configMap", "items") {
				key := str(t, pod, "volumes", i, "configMap", "items", j, "key")
				if _, ok := cmData[key]; !ok {
					t.Errorf("config volume maps key %q, which raftka-config lacks", key)
				}
			}
		}
	}
	claim := str(t, sts, "spec", "volumeClaimTemplates", 0, "metadata", "name")

	type containerView struct {
		args    []string
		vars    map[string]string
		mounts  map[string]string // mountPath -> volume
		name    string
		context map[string]any
	}
	view := func(c map[string]any) containerView {
		v := containerView{args: strs(t, c, "args"), vars: map[string]string{}, mounts: map[string]string{}, name: str(t, c, "name"), context: c}
		for i := range list(t, c, "env") {
			name := str(t, c, "env", i, "name")
			if from, ok := mapping(t, c, "env", i)["valueFrom"].(map[string]any); ok {
				switch {
				case from["fieldRef"] != nil:
					v.vars[name] = "fieldRef:" + str(t, from, "fieldRef", "fieldPath")
				case from["configMapKeyRef"] != nil:
					ref := mapping(t, from, "configMapKeyRef")
					if str(t, ref, "name") != "raftka-config" {
						t.Errorf("%s: env %s from ConfigMap %v", v.name, name, ref["name"])
					} else if _, ok := cmData[str(t, ref, "key")]; !ok {
						t.Errorf("%s: env %s from missing key %v", v.name, name, ref["key"])
					}
					v.vars[name] = "configMap:" + str(t, ref, "key")
				default:
					t.Errorf("%s: env %s: unexpected source %v", v.name, name, from)
				}
			} else {
				v.vars[name] = str(t, c, "env", i, "value")
			}
		}
		for i := range list(t, c, "volumeMounts") {
			v.mounts[str(t, c, "volumeMounts", i, "mountPath")] = str(t, c, "volumeMounts", i, "name")
		}
		if drop := strs(t, c, "securityContext", "capabilities", "drop"); !slices.Equal(drop, []string{"ALL"}) {
			t.Errorf("%s: capabilities drop %q, want ALL", v.name, drop)
		}
		if at(t, c, "securityContext", "allowPrivilegeEscalation") != false || at(t, c, "securityContext", "readOnlyRootFilesystem") != true {
			t.Errorf("%s: securityContext %v", v.name, at(t, c, "securityContext"))
		}
		return v
	}
	inits := list(t, pod, "initContainers")
	if len(inits) != 1 || len(list(t, pod, "containers")) != 1 {
		t.Fatalf("want one init container and one container")
	}
	format := view(mapping(t, pod, "initContainers", 0))
	server := view(mapping(t, pod, "containers", 0))
	if !slices.Equal(format.args[:2], []string{"storage", "format"}) || !slices.Contains(format.args, "--ignore-formatted") || server.args[0] != "server" {
		t.Errorf("format args %q, server args %q", format.args, server.args)
	}
	if str(t, format.context, "image") != str(t, server.context, "image") {
		t.Errorf("the init container must format with the same image (and raftka version) that serves")
	}
	for _, c := range []containerView{format, server} {
		if c.mounts["/data"] != claim {
			t.Errorf("%s: /data is volume %q, the claim template is %q", c.name, c.mounts["/data"], claim)
		}
		cfgPath, _ := flagValue(c.args, "--config")
		if configFiles[c.mounts[filepath.Dir(cfgPath)]] != "raftka-config" {
			t.Errorf("%s: --config %s is not in a mounted raftka-config volume", c.name, cfgPath)
		}
		if c.vars["POD_INDEX"] != "fieldRef:metadata.labels['apps.kubernetes.io/pod-index']" {
			t.Errorf("%s: POD_INDEX %q: want the pod-index label", c.name, c.vars["POD_INDEX"])
		}
	}
	formatCfg, _ := flagValue(format.args, "--config")
	serverCfg, _ := flagValue(server.args, "--config")
	if formatCfg != serverCfg {
		t.Errorf("format reads %s, server reads %s", formatCfg, serverCfg)
	}
	clusterID := cmData["cluster.id"]
	if id, ok := clusterID.(string); !ok {
		t.Errorf("cluster.id %v", clusterID)
	} else if _, err := storage.ParseUUID(id); err != nil {
		t.Errorf("cluster.id %q: %v", id, err)
	}
	if got, _ := flagValue(format.args, "--cluster-id"); got != "$(CLUSTER_ID)" || format.vars["CLUSTER_ID"] != "configMap:cluster.id" {
		t.Errorf("format --cluster-id %q from %q: want the ConfigMap's cluster.id", got, format.vars["CLUSTER_ID"])
	}

	grace := time.Duration(num(t, pod, "terminationGracePeriodSeconds")) * time.Second
	timeout, _ := flagValue(server.args, "--shutdown-timeout")
	if grace < duration(t, timeout)+graceMargin {
		t.Errorf("terminationGracePeriodSeconds %v leaves no room after --shutdown-timeout %s", grace, timeout)
	}

	// Probes hit the metrics listener through the named port.
	ports := map[string]int{}
	for i := range list(t, server.context, "ports") {
		ports[str(t, server.context, "ports", i, "name")] = num(t, server.context, "ports", i, "containerPort")
	}
	for probe, path := range map[string]string{"readinessProbe": "/readyz", "livenessProbe": "/healthz", "startupProbe": "/healthz"} {
		if got := str(t, server.context, probe, "httpGet", "path"); got != path {
			t.Errorf("%s path %q, want %q", probe, got, path)
		}
		if got := str(t, server.context, probe, "httpGet", "port"); ports[got] == 0 {
			t.Errorf("%s port %q is not a named container port", probe, got)
		}
	}
	for _, svc := range []map[string]any{headless, client} {
		for i := range list(t, svc, "spec", "ports") {
			if target := str(t, svc, "spec", "ports", i, "targetPort"); ports[target] == 0 {
				t.Errorf("service %s: targetPort %q is not a named container port", str(t, svc, "metadata", "name"), target)
			}
		}
	}

	// Each pod's configuration, as the kubelet would expand the args.
	props, ok := cmData["server.properties"].(string)
	if !ok {
		t.Fatalf("raftka-config has no server.properties")
	}
	const namespace = "kafka"
	for ordinal := range replicas {
		podName := fmt.Sprintf("%s-%d", str(t, sts, "metadata", "name"), ordinal)
		values := map[string]string{
			"fieldRef:metadata.labels['apps.kubernetes.io/pod-index']": strconv.Itoa(ordinal),
			"fieldRef:metadata.name":                                   podName,
			"fieldRef:metadata.namespace":                              namespace,
			"configMap:cluster.id":                                     fmt.Sprint(clusterID),
		}
		var cfgs []*config.Config
		for _, c := range []containerView{format, server} {
			vars := map[string]string{}
			for name, src := range c.vars {
				if v, ok := values[src]; ok {
					vars[name] = v
				} else {
					vars[name] = src
				}
			}
			var overrides []string
			for _, o := range flagValues(c.args, "--override") {
				overrides = append(overrides, expand(t, c.name, o, vars))
			}
			cfgs = append(cfgs, loadConfig(t, podName+" "+c.name, []byte(props), overrides))
		}
		formatCfg, cfg := cfgs[0], cfgs[1]
		if cfg.NodeID != int32(ordinal) || formatCfg.NodeID != cfg.NodeID {
			t.Errorf("%s: node.id %d (format: %d), want the ordinal %d", podName, cfg.NodeID, formatCfg.NodeID, ordinal)
		}
		if !slices.Equal(formatCfg.AllDirs(), cfg.AllDirs()) {
			t.Errorf("%s: format writes %q, server reads %q", podName, formatCfg.AllDirs(), cfg.AllDirs())
		}
		if len(cfg.Voters) != replicas {
			t.Errorf("%s: %d voters for %d replicas", podName, len(cfg.Voters), replicas)
		}
		for _, v := range cfg.Voters {
			if want := fmt.Sprintf("%s-%d.%s", str(t, sts, "metadata", "name"), v.ID, headlessName); v.Host != want || v.Port != ports["controller"] {
				t.Errorf("%s: voter %v, want %s:%d", podName, v, want, ports["controller"])
			}
		}
		wantAdv := fmt.Sprintf("PLAINTEXT://%s.%s.%s.svc:%d", podName, headlessName, namespace, ports["kafka"])
		if len(cfg.AdvertisedListeners) != 1 || cfg.AdvertisedListeners[0].String() != wantAdv {
			t.Errorf("%s: advertised %v, want %s", podName, cfg.AdvertisedListeners, wantAdv)
		}
		if _, p := hostPort(t, cfg.MetricsListener); p != ports["metrics"] {
			t.Errorf("%s: metrics.listener %s, container port %d", podName, cfg.MetricsListener, ports["metrics"])
		}
		if cfg.DefaultReplicationFactor != int16(replicas) || cfg.MinInsyncReplicas != 2 {
			t.Errorf("%s: replication factor %d, min.insync.replicas %d", podName, cfg.DefaultReplicationFactor, cfg.MinInsyncReplicas)
		}
		for _, d := range cfg.AllDirs() {
			if !strings.HasPrefix(d, "/data/") {
				t.Errorf("%s: directory %s is outside the volume at /data", podName, d)
			}
		}
	}
}

// systemdUnit reads a unit file into key -> values, one per line the key
// appears on.
func systemdUnit(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	unit := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s: line %q is not key=value", path, line)
			}
			unit[section+"."+k] = append(unit[section+"."+k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return unit
}

func TestSystemdUnit(t *testing.T) {
	unit := systemdUnit(t, filepath.Join("systemd", "raftka.service"))
	one := func(key string) string {
		t.Helper()
		if len(unit[key]) != 1 {
			t.Fatalf("%s: %q, want one value", key, unit[key])
		}
		return unit[key][0]
	}
	for key, want := range map[string]string{
		"Service.Type":            "simple",
		"Service.User":            "raftka",
		"Service.KillSignal":      "SIGTERM",
		"Service.Restart":         "on-failure",
		"Service.ProtectSystem":   "strict",
		"Service.NoNewPrivileges": "true",
		"Service.PrivateTmp":      "true",
		"Install.WantedBy":        "multi-user.target",
	} {
		if got := one(key); got != want {
			t.Errorf("%s=%s, want %s", key, got, want)
		}
	}
	if n, err := strconv.Atoi(one("Service.LimitNOFILE")); err != nil || n < 65536 {
		t.Errorf("LimitNOFILE=%s", one("Service.LimitNOFILE"))
	}
	pre := strings.Fields(one("Service.ExecStartPre"))
	start := strings.Fields(one("Service.ExecStart"))
	if !slices.Equal(pre[1:3], []string{"storage", "format"}) || !slices.Contains(pre, "--ignore-formatted") || start[1] != "server" || pre[0] != start[0] {
		t.Errorf("ExecStartPre %q, ExecStart %q", pre, start)
	}
	preCfg, _ := flagValue(pre, "--config")
	startCfg, _ := flagValue(start, "--config")
	if preCfg == "" || preCfg != startCfg {
		t.Errorf("format reads %q, server reads %q", preCfg, startCfg)
	}
	if id, _ := flagValue(pre, "--cluster-id"); id != "${RAFTKA_CLUSTER_ID}" || one("Service.EnvironmentFile") == "" {
		t.Errorf("--cluster-id %q: want it from the EnvironmentFile", id)
	}
	timeout, _ := flagValue(start, "--shutdown-timeout")
	stop, err := strconv.Atoi(one("Service.TimeoutStopSec"))
	if err != nil || time.Duration(stop)*time.Second < duration(t, timeout)+graceMargin {
		t.Errorf("TimeoutStopSec=%s leaves no room after --shutdown-timeout %s", one("Service.TimeoutStopSec"), timeout)
	}
	// The data directory must stay writable under ProtectSystem=strict.
	if rw := unit["Service.ReadWritePaths"]; len(rw) != 1 || !strings.HasPrefix(rw[0], "/var/lib/raftka") {
		t.Errorf("ReadWritePaths %q", rw)
	}
}
