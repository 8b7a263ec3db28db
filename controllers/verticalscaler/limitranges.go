package verticalscaler

// +kubebuilder:rbac:groups="",resources=limitranges,verbs=list;watch

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/verticalscaler/recommender"
)

// cappedResources are the resources a LimitRange caps here: those the controller recommends.
var cappedResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// limitRangeItem is what a namespace's LimitRanges ask of one type (Container or Pod), merged
// as the VPA merges them: per resource, the lowest max and the highest min of every item of the
// type, and the defaults of the first LimitRange by name that sets them (the LimitRanger
// admission plugin applies the first defaults it meets).
type limitRangeItem struct {
	min, max, defaultLimit, defaultRequest corev1.ResourceList
}

// limitRanges are a namespace's LimitRanges, as they bear on the resources the controller
// gives containers. The zero value asks nothing.
type limitRanges struct {
	container, pod limitRangeItem
}

// mergeLimitRanges merges a namespace's LimitRanges.
func mergeLimitRanges(items []corev1.LimitRange) limitRanges {
	items = slices.Clone(items)
	slices.SortFunc(items, func(a, b corev1.LimitRange) int { return strings.Compare(a.Name, b.Name) })
	var out limitRanges
	for _, lr := range items {
		for _, item := range lr.Spec.Limits {
			switch item.Type {
			case corev1.LimitTypeContainer:
				out.container.merge(item)
			case corev1.LimitTypePod:
				out.pod.merge(item)
			}
		}
	}
	return out
}

// merge adds item's constraints to l.
func (l *limitRangeItem) merge(item corev1.LimitRangeItem) {
	for _, name := range cappedResources {
		if q, ok := item.Max[name]; ok && (!has(l.max, name) || q.Cmp(l.max[name]) < 0) {
			l.max = set(l.max, name, q)
		}
		if q, ok := item.Min[name]; ok && (!has(l.min, name) || q.Cmp(l.min[name]) > 0) {
			l.min = set(l.min, name, q)
		}
		if q, ok := item.Default[name]; ok && !has(l.defaultLimit, name) {
			l.defaultLimit = set(l.defaultLimit, name, q)
		}
		if q, ok := item.DefaultRequest[name]; ok && !has(l.defaultRequest, name) {
			l.defaultRequest = set(l.defaultRequest, name, q)
		}
	}
}

func has(list corev1.ResourceList, name corev1.ResourceName) bool {
	_, ok := list[name]
	return ok
}

// set sets list[name] to q, making list if it is nil, and returns it.
func set(list corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) corev1.ResourceList {
	if list == nil {
		list = corev1.ResourceList{}
	}
	list[name] = q.DeepCopy()
	return list
}

// VerticalScalersOfLimitRange maps a LimitRange to every VerticalScaler of its namespace: what
// their targets' Pods may be given depends on it.
func VerticalScalersOfLimitRange(reader client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var list v1alpha1.VerticalScalerList
		if err := reader.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing VerticalScalers of a LimitRange's namespace failed")
			return nil
		}
		requests := make([]reconcile.Request, 0, len(list.Items))
		for i := range list.Items {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
		return requests
	}
}

// limitRangesIn reads the LimitRanges of namespace from the cache.
func limitRangesIn(ctx context.Context, reader client.Reader, namespace string) (limitRanges, error) {
	var list corev1.LimitRangeList
	if err := reader.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return limitRanges{}, fmt.Errorf("listing the LimitRanges of namespace %s: %w", namespace, err)
	}
	return mergeLimitRanges(list.Items), nil
}

// admitted returns resources as the API server admits them into a Pod of the namespace: a
// missing limit is the LimitRange's default, and a missing request the limit (Kubernetes'
// defaulting) or else the LimitRange's default request.
func (l limitRanges) admitted(resources corev1.ResourceRequirements) corev1.ResourceRequirements {
	out := *resources.DeepCopy()
	for _, name := range cappedResources {
		limit, hasLimit := out.Limits[name]
		if _, ok := out.Requests[name]; !ok {
			if hasLimit {
				out.Requests = set(out.Requests, name, limit)
			} else if d, ok := l.container.defaultRequest[name]; ok {
				out.Requests = set(out.Requests, name, d)
			}
		}
		if d, ok := l.container.defaultLimit[name]; ok && !hasLimit {
			out.Limits = set(out.Limits, name, d)
		}
	}
	return out
}

// capToLimitRanges returns rec with its targets and bounds brought within the namespace's
// LimitRanges for containers, as the VPA's admission controller and updater bring them, so
// that the API server admits the Pods that carry them:
//   - the sum over the Pod's containers within the Pod's min and max, scaled in proportion;
//     containers without a recommendation count with their requests, and are given them scaled
//     too (those whose policy mode is Off count, but are not given anything);
//   - then each container's within the container min and max, keeping the ratio of its limit
//     to its request, since the limit must stay within them too;
//   - then the container policy's minAllowed and maxAllowed again, which the VPA lets win.
//
// admitted are the containers' resources as the API server admits them (limitRanges.admitted),
// and rec is not changed.
func capToLimitRanges(spec *v1alpha1.VerticalScalerSpec, containers []corev1.Container, admitted []corev1.ResourceRequirements,
	rec *v1alpha1.Recommendation, ranges limitRanges) *v1alpha1.Recommendation {
	if ranges.container.empty() && ranges.pod.empty() {
		return rec
	}
	out := rec.DeepCopy()
	if !ranges.pod.empty() {
		out.ContainerRecommendations = capPodSums(spec, containers, admitted, out.ContainerRecommendations, ranges.pod)
	}
	for i := range out.ContainerRecommendations {
		r := &out.ContainerRecommendations[i]
		j := slices.IndexFunc(containers, func(c corev1.Container) bool { return c.Name == r.ContainerName })
		if j < 0 {
			continue
		}
		p := recommender.ContainerPolicyFor(spec, r.ContainerName)
		for _, values := range []*corev1.ResourceList{&r.Target, &r.LowerBound, &r.UpperBound} {
			*values = recommender.Clamp(ranges.container.capContainer(*values, admitted[j]), p.MinAllowed, p.MaxAllowed)
		}
	}
	return out
}

// empty says whether l asks nothing of the resources the controller gives.
func (l limitRangeItem) empty() bool {
	return len(l.min) == 0 && len(l.max) == 0 && len(l.defaultLimit) == 0 && len(l.defaultRequest) == 0
}

// capContainer returns values brought within l's min and max for a container that has
// resources: the request whose limit, in the container's ratio of limit to request, meets the
// bound, and for min also the bound itself, since Kubernetes holds the request to it too.
func (l limitRangeItem) capContainer(values corev1.ResourceList, resources corev1.ResourceRequirements) corev1.ResourceList {
	if values == nil {
		return nil
	}
	out := corev1.ResourceList{}
	for name, v := range values {
		if lo := boundaryRequest(name, resources, l.min[name], l.defaultLimit[name]); !lo.IsZero() && v.Cmp(lo) < 0 {
			v = lo
		}
		if lo, ok := l.min[name]; ok && !lo.IsZero() && v.Cmp(lo) < 0 {
			v = lo
		}
		if hi := boundaryRequest(name, resources, l.max[name], l.defaultLimit[name]); !hi.IsZero() && v.Cmp(hi) > 0 {
			v = hi
		}
		out[name] = v.DeepCopy()
	}
	return out
}

// boundaryRequest returns the request of resource name whose limit, in the ratio of the
// container's limit (or else defaultLimit) to its request, is boundary; zero when the container
// has no limit, for then nothing bounds its request.
func boundaryRequest(name corev1.ResourceName, resources corev1.ResourceRequirements, boundary, defaultLimit resource.Quantity) resource.Quantity {
	limit := resources.Limits[name]
	if limit.IsZero() {
		limit = defaultLimit
	}
	if limit.IsZero() || boundary.IsZero() {
		return resource.Quantity{}
	}
	request := resources.Requests[name]
	if request.IsZero() {
		return boundary.DeepCopy()
	}
	return scaleInProportion(name, request, limit, boundary, false)
}

// proportionalLimit returns the limit that keeps the container's ratio of limit to request
// when its request becomes recommended, as the VPA computes it to sum a Pod's limits; false
// when the container has no limit.
func proportionalLimit(name corev1.ResourceName, resources corev1.ResourceRequirements, recommended resource.Quantity) (resource.Quantity, bool) {
	limit := resources.Limits[name]
	request := resources.Requests[name]
	switch {
	case limit.IsZero() || recommended.IsZero():
		return resource.Quantity{}, false
	case request.IsZero() || request.MilliValue() == limit.MilliValue():
		return recommended.DeepCopy(), true
	}
	return scaleInProportion(name, limit, request, recommended, false), true
}

// scaleInProportion returns value × to / from, in millicores for CPU and whole units
// otherwise, rounded down, or up with roundUp. A from of zero leaves value as it is.
func scaleInProportion(name corev1.ResourceName, value, from, to resource.Quantity, roundUp bool) resource.Quantity {
	unit := func(q resource.Quantity) *big.Int {
		if name == corev1.ResourceCPU {
			return big.NewInt(q.MilliValue())
		}
		return big.NewInt(q.Value())
	}
	base := unit(from)
	if base.Sign() == 0 {
		return value.DeepCopy()
	}
	product := new(big.Int).Mul(unit(value), unit(to))
	quotient, remainder := new(big.Int).QuoRem(product, base, new(big.Int))
	if roundUp && remainder.Sign() != 0 {
		quotient.Add(quotient, big.NewInt(1))
	}
	if !quotient.IsInt64() {
		return value.DeepCopy()
	}
	if name == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(quotient.Int64(), value.Format)
	}
	return *resource.NewQuantity(quotient.Int64(), value.Format)
}

// capPodSums brings, per resource, the sum of recs' targets and bounds over the Pod's
// containers within the Pod's min and max (see capToLimitRanges), as the VPA does: a sum of
// recommended requests under the min raises each in proportion (rounded up); a sum of their
// proportional limits outside min or max scales each in proportion to it (rounded down).
func capPodSums(spec *v1alpha1.VerticalScalerSpec, containers []corev1.Container, admitted []corev1.ResourceRequirements,
	recs []v1alpha1.ContainerRecommendation, pod limitRangeItem) []v1alpha1.ContainerRecommendation {
	index := make([]int, len(containers)) // per container, its recommendation in recs, or -1
	for i, c := range containers {
		index[i] = slices.IndexFunc(recs, func(r v1alpha1.ContainerRecommendation) bool { return r.ContainerName == c.Name })
		if index[i] < 0 && recommender.Recommends(spec, c.Name) && len(admitted[i].Requests) > 0 {
			recs = append(recs, v1alpha1.ContainerRecommendation{ContainerName: c.Name, Target: admitted[i].Requests.DeepCopy()})
			index[i] = len(recs) - 1
		}
	}
	fields := []func(*v1alpha1.ContainerRecommendation) *corev1.ResourceList{
		func(r *v1alpha1.ContainerRecommendation) *corev1.ResourceList { return &r.UpperBound },
		func(r *v1alpha1.ContainerRecommendation) *corev1.ResourceList { return &r.Target },
		func(r *v1alpha1.ContainerRecommendation) *corev1.ResourceList { return &r.LowerBound },
	}
	for _, field := range fields {
		for _, name := range cappedResources {
			capPodSum(name, admitted, index, recs, field, pod)
		}
	}
	return recs
}

// capPodSum is capPodSums for one resource and one of the recommendations' fields.
func capPodSum(name corev1.ResourceName, admitted []corev1.ResourceRequirements, index []int, recs []v1alpha1.ContainerRecommendation,
	field func(*v1alpha1.ContainerRecommendation) *corev1.ResourceList, pod limitRangeItem) {
	valueOf := func(i int) (resource.Quantity, bool) {
		if index[i] < 0 {
			return admitted[i].Requests[name], false
		}
		q, ok := (*field(&recs[index[i]]))[name]
		return q, ok
	}
	var sumLimits, sumValues resource.Quantity
	for i := range admitted {
		v, _ := valueOf(i)
		if limit, ok := proportionalLimit(name, admitted[i], v); ok {
			sumLimits.Add(limit)
		}
		sumValues.Add(v)
	}
	lo, hi := pod.min[name], pod.max[name]
	scale := func(from, to resource.Quantity, roundUp bool) {
		for i := range admitted {
			if v, ok := valueOf(i); ok {
				(*field(&recs[index[i]]))[name] = scaleInProportion(name, v, from, to, roundUp)
			}
		}
	}
	switch {
	case lo.Cmp(sumLimits) <= 0 && lo.Cmp(sumValues) <= 0 && (hi.IsZero() || hi.Cmp(sumLimits) >= 0):
	case lo.Cmp(sumValues) > 0 && !sumLimits.IsZero():
		scale(sumValues, lo, true)
	case sumLimits.IsZero():
	case lo.Cmp(sumLimits) > 0:
		scale(sumLimits, lo, false)
	default:
		scale(sumLimits, hi, false)
	}
}
