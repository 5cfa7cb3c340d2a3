package v1alpha1

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/conversion"

	widgetv1 "github.com/hubspoke/hubspoke/internal/crwidget/v1"
)

var _ conversion.Convertible = (*Widget)(nil)

// ConvertTo converts this Widget to the hub version (v1): spec.replicas
// becomes spec.size, everything else is copied.
func (src *Widget) ConvertTo(dstRaw conversion.Hub) error {
	dst, ok := dstRaw.(*widgetv1.Widget)
	if !ok {
		return fmt.Errorf("convert v1alpha1 widget %q to hub: unexpected hub type %T", src.Name, dstRaw)
	}
	dst.ObjectMeta = src.ObjectMeta
	dst.Spec = widgetv1.WidgetSpec{
		Size:            src.Spec.Replicas,
		Mode:            src.Spec.Mode,
		MinReadySeconds: src.Spec.MinReadySeconds,
		Selector:        src.Spec.Selector,
		Template:        src.Spec.Template,
	}
	dst.Status = src.Status
	return nil
}

// ConvertFrom converts from the hub version (v1) to this version: spec.size
// becomes spec.replicas, everything else is copied.
func (dst *Widget) ConvertFrom(srcRaw conversion.Hub) error {
	src, ok := srcRaw.(*widgetv1.Widget)
	if !ok {
		return fmt.Errorf("convert hub widget to v1alpha1: unexpected hub type %T", srcRaw)
	}
	dst.ObjectMeta = src.ObjectMeta
	dst.Spec = WidgetSpec{
		Replicas:        src.Spec.Size,
		Mode:            src.Spec.Mode,
		MinReadySeconds: src.Spec.MinReadySeconds,
		Selector:        src.Spec.Selector,
		Template:        src.Spec.Template,
	}
	dst.Status = src.Status
	return nil
}
