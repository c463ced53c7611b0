package watch

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// configMapResource describes config maps: kube-state-metrics'
// internal/store/configmap.go. Every family reads only metadata, so config
// maps are watched as metav1.PartialObjectMetadata: their data never reaches
// the agent.
func configMapResource() *Resource {
	return metadataResource("configmaps", schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, true,
		func(o *metav1.PartialObjectMetadata, e *Emitter) {
			e.Identity("namespace", o.Namespace, "configmap", o.Name)
		},
		configMapFamilies,
	)
}

func configMapFamilies(o FamilyOptions) []Family[*metav1.PartialObjectMetadata] {
	type M = *metav1.PartialObjectMetadata
	return []Family[M]{
		{
			Name: "kube_configmap_annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("annotation", objectAnnotations[M], o.AnnotationsAllowlist),
		},
		{
			Name: "kube_configmap_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Stable,
			Generate: mapFamily("label", objectLabels[M], o.LabelsAllowlist),
		},
		{
			Name: "kube_configmap_info", Help: "Information about configmap.",
			Type: Gauge, Stability: Stable,
			Generate: func(_ M, e *Emitter) { e.Emit(1) },
		},
		{
			Name: "kube_configmap_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Stable, Generate: emitCreated[M],
		},
		{
			Name: "kube_configmap_metadata_resource_version", Help: "Resource version representing a specific version of the configmap.",
			Type: Gauge, Stability: Alpha, Generate: emitResourceVersion[M],
		},
	}
}

// metadataResource describes a resource watched as metadata only, through
// the metadata client.
func metadataResource(
	name string, gvr schema.GroupVersionResource, namespaced bool,
	identity func(*metav1.PartialObjectMetadata, *Emitter),
	families func(FamilyOptions) []Family[*metav1.PartialObjectMetadata],
) *Resource {
	r := newResource(name, namespaced, &metav1.PartialObjectMetadata{},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Metadata.Resource(gvr).Namespace(ns).List(ctx, o)
		},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Metadata.Resource(gvr).Namespace(ns).Watch(ctx, o)
		},
		identity, families,
	)
	r.gr = gvr.GroupResource()
	return r
}
