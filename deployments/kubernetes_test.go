package deployments

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/conciergehq/concierge/config"
)

const manifestPath = "kubernetes/concierge.yaml"

// manifests is what decodeManifests found, by kind.
type manifests struct {
	jobs        []*batchv1.Job
	deployments []*appsv1.Deployment
	services    []*corev1.Service
	pdbs        []*policyv1.PodDisruptionBudget
	hpas        []*autoscalingv2.HorizontalPodAutoscaler
	policies    []*networkingv1.NetworkPolicy
}

// decodeManifests decodes every YAML document strictly into its Kubernetes
// API type with apimachinery's own serializer: an unknown or duplicate
// field, a field in the wrong case, a bad quantity, or a kind or API version
// these manifests do not use is an error.
func decodeManifests(data []byte) (manifests, error) {
	// Only the kinds these manifests use, in the versions they use.
	scheme := runtime.NewScheme()
	scheme.AddKnownTypes(batchv1.SchemeGroupVersion, &batchv1.Job{})
	scheme.AddKnownTypes(appsv1.SchemeGroupVersion, &appsv1.Deployment{})
	scheme.AddKnownTypes(corev1.SchemeGroupVersion, &corev1.Service{})
	scheme.AddKnownTypes(policyv1.SchemeGroupVersion, &policyv1.PodDisruptionBudget{})
	scheme.AddKnownTypes(autoscalingv2.SchemeGroupVersion, &autoscalingv2.HorizontalPodAutoscaler{})
	scheme.AddKnownTypes(networkingv1.SchemeGroupVersion, &networkingv1.NetworkPolicy{})
	serializer := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme,
		kjson.SerializerOptions{Yaml: true, Strict: true})
	var m manifests
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 1; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return manifests{}, fmt.Errorf("document %d: %w", i, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, gvk, err := serializer.Decode(doc, nil, nil)
		if err != nil {
			return manifests{}, fmt.Errorf("document %d: %w", i, err)
		}
		if meta, ok := obj.(metav1.Object); !ok || meta.GetName() == "" {
			return manifests{}, fmt.Errorf("document %d (%s): no metadata.name", i, gvk.Kind)
		}
		switch o := obj.(type) {
		case *batchv1.Job:
			m.jobs = append(m.jobs, o)
		case *appsv1.Deployment:
			m.deployments = append(m.deployments, o)
		case *corev1.Service:
			m.services = append(m.services, o)
		case *policyv1.PodDisruptionBudget:
			m.pdbs = append(m.pdbs, o)
		case *autoscalingv2.HorizontalPodAutoscaler:
			m.hpas = append(m.hpas, o)
		case *networkingv1.NetworkPolicy:
			m.policies = append(m.policies, o)
		default:
			return manifests{}, fmt.Errorf("document %d: %s is not a kind these manifests use", i, gvk)
		}
	}
	return m, nil
}

func stripComments(doc []byte) []byte {
	var out []byte
	for line := range bytes.Lines(doc) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line...)
		}
	}
	return out
}

// workload is a pod template with the name of what runs it.
type workload struct {
	name string
	pod  corev1.PodTemplateSpec
}

func (m manifests) workloads() []workload {
	var out []workload
	for _, j := range m.jobs {
		out = append(out, workload{"Job " + j.Name, j.Spec.Template})
	}
	for _, d := range m.deployments {
		out = append(out, workload{"Deployment " + d.Name, d.Spec.Template})
	}
	return out
}

// check returns every way the manifests fall short of what a production
// deployment needs; none means they are fine.
func (m manifests) check(shutdownTimeout time.Duration) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if len(m.jobs) != 1 || len(m.deployments) != 2 {
		add("want the migrate Job and the two Deployments (API, worker), got %d Jobs and %d Deployments", len(m.jobs), len(m.deployments))
	}
	for _, w := range m.workloads() {
		problems = append(problems, checkPod(w)...)
		policies := 0
		for _, p := range m.policies {
			if !selects(&p.Spec.PodSelector, w.pod.Labels) {
				continue
			}
			policies++
			if !slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) || !slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
				add("NetworkPolicy %s: policyTypes must list Ingress and Egress, so whatever is not allowed is denied", p.Name)
			}
			if !allowsEgressPort(p, corev1.ProtocolUDP, 53) {
				add("NetworkPolicy %s: no egress to DNS (UDP 53)", p.Name)
			}
			for _, c := range w.pod.Spec.Containers {
				for _, port := range c.Ports {
					if !allowsIngressPort(p, port) {
						add("NetworkPolicy %s: no ingress to %s's port %s (%d)", p.Name, w.name, port.Name, port.ContainerPort)
					}
				}
			}
		}
		if policies != 1 {
			add("%s: %d NetworkPolicies select its pods, want 1", w.name, policies)
		}
	}
	for _, d := range m.deployments {
		name := "Deployment " + d.Name
		if !selects(d.Spec.Selector, d.Spec.Template.Labels) {
			add("%s: its selector does not match its pod labels", name)
		}
		for _, other := range m.deployments {
			if other != d && selects(d.Spec.Selector, other.Spec.Template.Labels) {
				add("%s: its selector also matches Deployment %s's pods", name, other.Name)
			}
		}
		if got := time.Duration(ptrValue(d.Spec.Template.Spec.TerminationGracePeriodSeconds, 30)) * time.Second; got <= shutdownTimeout {
			add("%s: terminationGracePeriodSeconds %s must exceed CONCIERGE_SHUTDOWN_TIMEOUT's default %s", name, got, shutdownTimeout)
		}
		problems = append(problems, checkProbes(name, d.Spec.Template.Spec.Containers)...)

		pdbs := 0
		for _, p := range m.pdbs {
			if !selects(p.Spec.Selector, d.Spec.Template.Labels) {
				continue
			}
			pdbs++
			if p.Spec.MinAvailable == nil && p.Spec.MaxUnavailable == nil {
				add("PodDisruptionBudget %s: neither minAvailable nor maxUnavailable", p.Name)
			}
			for _, other := range m.workloads() {
				if other.name != name && selects(p.Spec.Selector, other.pod.Labels) {
					add("PodDisruptionBudget %s: also selects %s's pods", p.Name, other.name)
				}
			}
		}
		if pdbs != 1 {
			add("%s: %d PodDisruptionBudgets select its pods, want 1", name, pdbs)
		}

		hpas := 0
		for _, h := range m.hpas {
			ref := h.Spec.ScaleTargetRef
			if ref.Kind != "Deployment" || ref.APIVersion != "apps/v1" || ref.Name != d.Name {
				continue
			}
			hpas++
			if ptrValue(h.Spec.MinReplicas, 1) < 2 {
				add("HorizontalPodAutoscaler %s: minReplicas must be at least 2, for its PodDisruptionBudget to allow a disruption", h.Name)
			}
			if !scalesOnCPU(h) {
				add("HorizontalPodAutoscaler %s: no CPU utilization target", h.Name)
			}
		}
		if hpas != 1 {
			add("%s: %d HorizontalPodAutoscalers scale it, want 1", name, hpas)
		}
		if hpas > 0 && d.Spec.Replicas != nil {
			add("%s: has replicas although a HorizontalPodAutoscaler owns the count (each apply would reset it)", name)
		}
	}
	for _, h := range m.hpas {
		if !slices.ContainsFunc(m.deployments, func(d *appsv1.Deployment) bool { return d.Name == h.Spec.ScaleTargetRef.Name }) {
			add("HorizontalPodAutoscaler %s: scales %s %s, which is not in the manifests", h.Name, h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name)
		}
	}
	for _, s := range m.services {
		var target *appsv1.Deployment
		for _, d := range m.deployments {
			if len(s.Spec.Selector) > 0 && labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
				target = d
			}
		}
		if target == nil {
			add("Service %s: selects no Deployment's pods", s.Name)
			continue
		}
		for _, p := range s.Spec.Ports {
			if _, ok := containerPort(target.Spec.Template.Spec.Containers, p.TargetPort); !ok {
				add("Service %s: targetPort %s is no port of Deployment %s", s.Name, p.TargetPort.String(), target.Name)
			}
		}
	}
	return problems
}

// checkPod checks one pod template's security context, resources, writable
// /tmp and the ports its environment names.
func checkPod(w workload) []string {
	var problems []string
	add := func(format string, args ...any) {
		problems = append(problems, w.name+": "+fmt.Sprintf(format, args...))
	}
	spec := w.pod.Spec
	podSC := spec.SecurityContext
	if podSC == nil || !ptrValue(podSC.RunAsNonRoot, false) {
		add("the pod's securityContext must set runAsNonRoot: true")
	}
	if podSC == nil || podSC.SeccompProfile == nil || podSC.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		add("the pod's securityContext must set seccompProfile RuntimeDefault")
	}
	if ptrValue(spec.AutomountServiceAccountToken, true) {
		add("automountServiceAccountToken must be false: Concierge never calls the Kubernetes API")
	}
	if len(w.pod.Labels) == 0 {
		add("its pods have no labels")
	}
	for _, c := range spec.Containers {
		at := func(format string, args ...any) { add("container %s: "+format, append([]any{c.Name}, args...)...) }
		if c.Image == "" {
			at("no image")
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := c.Resources.Requests[r]; !ok || q.IsZero() {
				at("no %s request", r)
			}
		}
		if q, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok || q.IsZero() {
			at("no memory limit")
		}
		sc := c.SecurityContext
		switch {
		case sc == nil:
			at("no securityContext")
		default:
			if !ptrValue(sc.ReadOnlyRootFilesystem, false) {
				at("securityContext must set readOnlyRootFilesystem: true")
			}
			if ptrValue(sc.AllowPrivilegeEscalation, true) {
				at("securityContext must set allowPrivilegeEscalation: false")
			}
			if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
				at("securityContext must drop ALL capabilities and add none")
			}
			if ptrValue(sc.Privileged, false) || ptrValue(sc.RunAsUser, 1) == 0 {
				at("securityContext must not run privileged or as root")
			}
		}
		if !mountsEmptyDir(spec, c, "/tmp") {
			at("no emptyDir volume on /tmp: with a read-only root filesystem, temporary files (pdftotext's input) cannot be written")
		}
		for _, e := range c.Env {
			var port string
			switch e.Name {
			case "CONCIERGE_HTTP_ADDR":
				port = "http"
			case "CONCIERGE_METRICS_ADDR":
				port = "metrics"
			default:
				continue
			}
			_, p, err := net.SplitHostPort(e.Value)
			cp, ok := containerPort([]corev1.Container{c}, intstr.FromString(port))
			if err != nil || !ok || p != strconv.Itoa(int(cp)) {
				at("%s=%q does not listen on the container port named %s", e.Name, e.Value, port)
			}
			if port == "metrics" && w.pod.Annotations["prometheus.io/port"] != p {
				at("the prometheus.io/port annotation %q is not %s's port %s", w.pod.Annotations["prometheus.io/port"], e.Name, p)
			}
		}
	}
	return problems
}

// checkProbes wants a liveness probe on every long-running container, and on
// one serving HTTP, readiness on /readyz and liveness on /healthz.
func checkProbes(name string, containers []corev1.Container) []string {
	var problems []string
	for _, c := range containers {
		if c.LivenessProbe == nil {
			problems = append(problems, fmt.Sprintf("%s: container %s has no liveness probe", name, c.Name))
		}
		if _, serves := containerPort([]corev1.Container{c}, intstr.FromString("http")); !serves {
			continue
		}
		for _, want := range []struct {
			kind, path string
			probe      *corev1.Probe
		}{{"readiness", "/readyz", c.ReadinessProbe}, {"liveness", "/healthz", c.LivenessProbe}} {
			p := want.probe
			if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != want.path || p.HTTPGet.Port.String() != "http" {
				problems = append(problems, fmt.Sprintf("%s: container %s's %s probe must GET %s on the http port", name, c.Name, want.kind, want.path))
			}
		}
		if p := c.ReadinessProbe; p != nil && p.TimeoutSeconds < 3 {
			problems = append(problems, fmt.Sprintf("%s: container %s's readiness timeout must be at least 3 s (/readyz waits up to 2 s for its checks)", name, c.Name))
		}
	}
	return problems
}

func ptrValue[T any](p *T, fallback T) T {
	if p == nil {
		return fallback
	}
	return *p
}

func selects(selector *metav1.LabelSelector, podLabels map[string]string) bool {
	if selector == nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(selector)
	return err == nil && !s.Empty() && s.Matches(labels.Set(podLabels))
}

func containerPort(containers []corev1.Container, port intstr.IntOrString) (int32, bool) {
	for _, c := range containers {
		for _, p := range c.Ports {
			if (port.Type == intstr.String && p.Name == port.StrVal) || (port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
				return p.ContainerPort, true
			}
		}
	}
	return 0, false
}

func mountsEmptyDir(spec corev1.PodSpec, c corev1.Container, path string) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath != path {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name == m.Name && v.EmptyDir != nil {
				return true
			}
		}
	}
	return false
}

func allowsIngressPort(p *networkingv1.NetworkPolicy, port corev1.ContainerPort) bool {
	for _, rule := range p.Spec.Ingress {
		for _, rp := range rule.Ports {
			if rp.Port != nil && (rp.Port.String() == port.Name || (rp.Port.Type == intstr.Int && rp.Port.IntVal == port.ContainerPort)) {
				return true
			}
		}
	}
	return false
}

func allowsEgressPort(p *networkingv1.NetworkPolicy, protocol corev1.Protocol, port int32) bool {
	for _, rule := range p.Spec.Egress {
		for _, rp := range rule.Ports {
			if rp.Port != nil && rp.Port.IntVal == port && ptrValue(rp.Protocol, corev1.ProtocolTCP) == protocol {
				return true
			}
		}
	}
	return false
}

func scalesOnCPU(h *autoscalingv2.HorizontalPodAutoscaler) bool {
	for _, m := range h.Spec.Metrics {
		if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU &&
			m.Resource.Target.Type == autoscalingv2.UtilizationMetricType && ptrValue(m.Resource.Target.AverageUtilization, 0) > 0 {
			return true
		}
	}
	return false
}

func defaultShutdownTimeout(t *testing.T) time.Duration {
	t.Helper()
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatalf("config defaults: %v", err)
	}
	return cfg.ShutdownTimeout
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestKubernetesManifests(t *testing.T) {
	m, err := decodeManifests(readFile(t, manifestPath))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m.check(defaultShutdownTimeout(t)) {
		t.Error(p)
	}
}

// TestKubernetesManifestsRefuse proves the decoding and the checks fail: each
// case changes the real manifests in one place.
func TestKubernetesManifestsRefuse(t *testing.T) {
	good := string(readFile(t, manifestPath))
	tests := []struct {
		name      string
		old, new  string
		wantError string // from decoding
		wantCheck string // else from the checks
	}{
		{name: "unknown field", old: "readinessProbe:", new: "readinesProbe:", wantError: `unknown field "spec.template.spec.containers[0].readinesProbe"`},
		{name: "field in the wrong case", old: "livenessProbe:\n            httpGet", new: "LivenessProbe:\n            httpGet", wantError: "unknown field"},
		{name: "duplicate field", old: "      restartPolicy: OnFailure\n", new: "      restartPolicy: OnFailure\n      restartPolicy: Never\n", wantError: "already set"},
		{name: "bad quantity", old: "cpu: 100m, memory: 64Mi", new: "cpu: 100mm, memory: 64Mi", wantError: "unable to parse quantity"},
		{name: "autoscaling/v1 has no metrics", old: "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: { name: concierge-api }", new: "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata: { name: concierge-api }", wantError: "autoscaling/v1"},
		{name: "unused kind", old: "apiVersion: v1\nkind: Service", new: "apiVersion: v1\nkind: ConfigMap", wantError: "ConfigMap"},
		{name: "root filesystem writable", old: "readOnlyRootFilesystem: true\n            capabilities: { drop: [\"ALL\"] }\n          volumeMounts:\n            - { name: tmp, mountPath: /tmp }\n      volumes:\n        # The", new: "readOnlyRootFilesystem: false\n            capabilities: { drop: [\"ALL\"] }\n          volumeMounts:\n            - { name: tmp, mountPath: /tmp }\n      volumes:\n        # The", wantCheck: "Deployment concierge-api: container api: securityContext must set readOnlyRootFilesystem: true"},
		{name: "no seccomp profile", old: "      restartPolicy: OnFailure\n      automountServiceAccountToken: false\n      securityContext:\n        runAsNonRoot: true\n        runAsUser: 65532 # the image's nonroot user (distroless)\n        runAsGroup: 65532\n        seccompProfile: { type: RuntimeDefault }", new: "      restartPolicy: OnFailure\n      automountServiceAccountToken: false\n      securityContext:\n        runAsNonRoot: true", wantCheck: "Job concierge-migrate: the pod's securityContext must set seccompProfile RuntimeDefault"},
		{name: "no writable /tmp", old: "          volumeMounts:\n            - { name: tmp, mountPath: /tmp }\n      volumes:\n        - name: tmp\n          emptyDir: { sizeLimit: 64Mi }\n", new: "", wantCheck: "Job concierge-migrate: container migrate: no emptyDir volume on /tmp"},
		{name: "no memory limit", old: "resources: { requests: { cpu: 100m, memory: 64Mi }, limits: { memory: 256Mi } }", new: "resources: { requests: { cpu: 100m, memory: 64Mi } }", wantCheck: "Job concierge-migrate: container migrate: no memory limit"},
		{name: "readiness on the wrong path", old: "httpGet: { path: /readyz, port: http }", new: "httpGet: { path: /healthz, port: http }", wantCheck: "readiness probe must GET /readyz on the http port"},
		{name: "worker without liveness", old: "          livenessProbe:\n            tcpSocket: { port: metrics }\n", new: "          readinessProbe:\n            tcpSocket: { port: metrics }\n", wantCheck: "Deployment concierge-worker: container worker has no liveness probe"},
		{name: "metrics address off its port", old: "- { name: CONCIERGE_METRICS_ADDR, value: \":9464\" }\n            - { name: CONCIERGE_LOG_FORMAT, value: json }\n            - { name: CONCIERGE_PUBLIC_URL", new: "- { name: CONCIERGE_METRICS_ADDR, value: \":9100\" }\n            - { name: CONCIERGE_LOG_FORMAT, value: json }\n            - { name: CONCIERGE_PUBLIC_URL", wantCheck: `container api: CONCIERGE_METRICS_ADDR=":9100" does not listen on the container port named metrics`},
		{name: "PDB selecting other pods", old: "maxUnavailable: 1\n  selector: { matchLabels: { app: concierge-worker } }", new: "maxUnavailable: 1\n  selector: { matchLabels: { app.kubernetes.io/name: concierge } }", wantCheck: "PodDisruptionBudget concierge-worker: also selects"},
		{name: "HPA on a missing Deployment", old: "scaleTargetRef: { apiVersion: apps/v1, kind: Deployment, name: concierge-worker }", new: "scaleTargetRef: { apiVersion: apps/v1, kind: Deployment, name: concierge-workers }", wantCheck: "Deployment concierge-worker: 0 HorizontalPodAutoscalers scale it, want 1"},
		{name: "replicas beside an HPA", old: "  selector: { matchLabels: { app: concierge-api } }\n  strategy:", new: "  replicas: 3\n  selector: { matchLabels: { app: concierge-api } }\n  strategy:", wantCheck: "Deployment concierge-api: has replicas although a HorizontalPodAutoscaler owns the count"},
		{name: "network policy missing the metrics port", old: "ports: [{ protocol: TCP, port: metrics }]\n  egress:\n    - to: [{ namespaceSelector: { matchLabels: { kubernetes.io/metadata.name: kube-system } } }]\n      ports: [{ protocol: UDP, port: 53 }, { protocol: TCP, port: 53 }]\n    - ports: [{ protocol: TCP, port: 5432 }, { protocol: TCP, port: 6379 }]\n    # HTTPS", new: "ports: [{ protocol: TCP, port: 9465 }]\n  egress:\n    - to: [{ namespaceSelector: { matchLabels: { kubernetes.io/metadata.name: kube-system } } }]\n      ports: [{ protocol: UDP, port: 53 }, { protocol: TCP, port: 53 }]\n    - ports: [{ protocol: TCP, port: 5432 }, { protocol: TCP, port: 6379 }]\n    # HTTPS", wantCheck: "NetworkPolicy concierge-api: no ingress to Deployment concierge-api's port metrics (9464)"},
		{name: "no network policy for the job", old: "podSelector: { matchLabels: { app: concierge-migrate } }", new: "podSelector: { matchLabels: { app: concierge-migration } }", wantCheck: "Job concierge-migrate: 0 NetworkPolicies select its pods, want 1"},
		{name: "short grace period", old: "terminationGracePeriodSeconds: 30", new: "terminationGracePeriodSeconds: 20", wantCheck: "Deployment concierge-api: terminationGracePeriodSeconds 20s must exceed CONCIERGE_SHUTDOWN_TIMEOUT's default 20s"},
		{name: "service on a missing port", old: "ports: [{ name: http, port: 80, targetPort: http }]", new: "ports: [{ name: http, port: 80, targetPort: web }]", wantCheck: "Service concierge-api: targetPort web is no port of Deployment concierge-api"},
	}
	shutdown := defaultShutdownTimeout(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if strings.Count(good, tt.old) != 1 {
				t.Fatalf("the manifests hold %q %d times, want once: update this case", tt.old, strings.Count(good, tt.old))
			}
			m, err := decodeManifests([]byte(strings.Replace(good, tt.old, tt.new, 1)))
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("decoding: got error %v, want one containing %q", err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatalf("decoding: %v", err)
			}
			problems := m.check(shutdown)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tt.wantCheck) }) {
				t.Fatalf("checks found %q, want one containing %q", problems, tt.wantCheck)
			}
		})
	}
}

var envName = regexp.MustCompile(`CONCIERGE_[A-Z0-9_]+`)

// TestEnvironmentNamesExist checks every CONCIERGE_* variable the deployment
// files name (settings and comments alike) is one config reads: a misspelt
// variable is otherwise silently ignored in production.
func TestEnvironmentNamesExist(t *testing.T) {
	known := map[string]bool{}
	for _, n := range config.Names() {
		known[n] = true
	}
	if !known["CONCIERGE_DATABASE_URL"] {
		t.Fatalf("config.Names() = %v, without CONCIERGE_DATABASE_URL", config.Names())
	}
	for _, path := range []string{manifestPath, "compose.yaml", "Dockerfile"} {
		names := envName.FindAllString(string(readFile(t, path)), -1)
		if len(names) == 0 {
			t.Errorf("%s names no CONCIERGE_* variable", path)
		}
		for _, n := range unknownNames(names, known) {
			t.Errorf("%s: %s is not a variable config reads (config.Names())", path, n)
		}
	}
	// And a misspelt name is caught.
	if got := unknownNames([]string{"CONCIERGE_DATABASE_URL", "CONCIERGE_DATABSE_URL"}, known); !slices.Equal(got, []string{"CONCIERGE_DATABSE_URL"}) {
		t.Errorf("unknownNames found %q, want the misspelt CONCIERGE_DATABSE_URL", got)
	}
}

func unknownNames(names []string, known map[string]bool) []string {
	var out []string
	for _, n := range names {
		if !known[n] && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
