// Package deployments holds no code: it is the home of the deployment files
// (Dockerfile, compose file, Kubernetes manifests, Prometheus alert rules,
// Grafana dashboard) and of the tests that check them: the manifests decoded
// strictly into the Kubernetes API types, the compose file against the
// Compose Specification's schema, the rules with promtool, and every metric
// they name against the ones Concierge exports.
package deployments
