/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * GstNetworkCongestion: a custom upstream event, mirrored as an element
 * message, with fields:
 *   type              (string)  rexmt | dupack | recovered | loss | rate
 *   estimated-bitrate (guint64) bit/s the transport believes it can carry
 *   srtt              (guint64) smoothed RTT in ns, GST_CLOCK_TIME_NONE if unknown
 *   source            (string)  name of the element that raised it
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "networkcongestion.h"

static const GFlagsValue congestion_values[] = {
  {GST_TWOFLOW_CONGESTION_REXMT, "Retransmission timeout", "rexmt"},
  {GST_TWOFLOW_CONGESTION_DUPACK, "Fast retransmit", "dupack"},
  {GST_TWOFLOW_CONGESTION_RECOVERED, "Recovered", "recovered"},
  {GST_TWOFLOW_CONGESTION_LOSS, "Loss reaction", "loss"},
  {GST_TWOFLOW_CONGESTION_RATE, "Requested rate", "rate"},
  {0, NULL, NULL}
};

/**
 * gst_twoflow_congestion_type_get_type:
 *
 * Returns: the #GType of the #GstTwoflowCongestionType flags
 */
GType
gst_twoflow_congestion_type_get_type (void)
{
  static gsize type = 0;

  if (g_once_init_enter (&type)) {
    GType t = g_flags_register_static ("GstTwoflowCongestionType",
        congestion_values);
    g_once_init_leave (&type, t);
  }
  return (GType) type;
}

/**
 * gst_twoflow_congestion_type_to_string:
 * @type: one congestion type (a single flag)
 *
 * Returns: (nullable) (transfer none): its name as in the `type` field
 * ("rexmt", "dupack", "recovered", "loss", "rate"), or %NULL when @type is
 * not exactly one flag
 */
const gchar *
gst_twoflow_congestion_type_to_string (GstTwoflowCongestionType type)
{
  const GFlagsValue *v;

  for (v = congestion_values; v->value_nick; v++)
    if ((GstTwoflowCongestionType) v->value == type)
      return v->value_nick;
  return NULL;
}

/**
 * gst_twoflow_congestion_type_from_string:
 * @str: (nullable): a name as in the `type` field
 * @type: (out): the congestion type of that name
 *
 * Returns: whether @str names a congestion type
 */
gboolean
gst_twoflow_congestion_type_from_string (const gchar * str,
    GstTwoflowCongestionType * type)
{
  const GFlagsValue *v;

  g_return_val_if_fail (type != NULL, FALSE);
  if (str == NULL)
    return FALSE;
  for (v = congestion_values; v->value_nick; v++) {
    if (g_str_equal (v->value_nick, str)) {
      *type = v->value;
      return TRUE;
    }
  }
  return FALSE;
}

/**
 * gst_twoflow_congestion_structure_new:
 * @type: what happened (exactly one flag)
 * @estimated_bitrate: bit/s the transport believes it can carry
 * @srtt: smoothed RTT in ns, %GST_CLOCK_TIME_NONE if unknown
 * @source: (nullable): name of the element raising it
 *
 * Returns: (transfer full): a `GstNetworkCongestion` structure
 */
GstStructure *
gst_twoflow_congestion_structure_new (GstTwoflowCongestionType type,
    guint64 estimated_bitrate, GstClockTime srtt, const gchar * source)
{
  const gchar *name = gst_twoflow_congestion_type_to_string (type);

  g_return_val_if_fail (name != NULL, NULL);
  return gst_structure_new (GST_TWOFLOW_CONGESTION_NAME,
      "type", G_TYPE_STRING, name,
      "estimated-bitrate", G_TYPE_UINT64, estimated_bitrate,
      "srtt", G_TYPE_UINT64, (guint64) srtt,
      "source", G_TYPE_STRING, source ? source : "", NULL);
}

/**
 * gst_twoflow_congestion_structure_parse:
 * @s: a structure
 * @type: (out) (optional): the congestion type
 * @estimated_bitrate: (out) (optional): bit/s (0 when absent)
 * @srtt: (out) (optional): smoothed RTT in ns (%GST_CLOCK_TIME_NONE when
 *   absent)
 * @source: (out) (optional) (transfer none) (nullable): name of the
 *   element that raised it, owned by @s
 *
 * Returns: whether @s is a `GstNetworkCongestion` structure with a known
 * type; the out values are only set when it is
 */
gboolean
gst_twoflow_congestion_structure_parse (const GstStructure * s,
    GstTwoflowCongestionType * type, guint64 * estimated_bitrate,
    GstClockTime * srtt, const gchar ** source)
{
  GstTwoflowCongestionType t;
  guint64 v;

  if (s == NULL || !gst_structure_has_name (s, GST_TWOFLOW_CONGESTION_NAME))
    return FALSE;
  if (!gst_twoflow_congestion_type_from_string (gst_structure_get_string (s,
              "type"), &t))
    return FALSE;
  if (type)
    *type = t;
  if (estimated_bitrate)
    *estimated_bitrate = gst_structure_get_uint64 (s, "estimated-bitrate",
        &v) ? v : 0;
  if (srtt)
    *srtt = gst_structure_get_uint64 (s, "srtt", &v) ? v : GST_CLOCK_TIME_NONE;
  if (source)
    *source = gst_structure_get_string (s, "source");
  return TRUE;
}

/**
 * gst_twoflow_congestion_event_new:
 * @type: what happened (exactly one flag)
 * @estimated_bitrate: bit/s the transport believes it can carry
 * @srtt: smoothed RTT in ns, %GST_CLOCK_TIME_NONE if unknown
 * @source: (nullable): name of the element raising it
 *
 * Returns: (transfer full): a new custom upstream event.
 */
GstEvent *
gst_twoflow_congestion_event_new (GstTwoflowCongestionType type,
    guint64 estimated_bitrate, GstClockTime srtt, const gchar * source)
{
  GstStructure *s = gst_twoflow_congestion_structure_new (type,
      estimated_bitrate, srtt, source);

  g_return_val_if_fail (s != NULL, NULL);
  return gst_event_new_custom (GST_EVENT_CUSTOM_UPSTREAM, s);
}

/**
 * gst_twoflow_congestion_event_parse:
 * @event: an event
 * @type: (out) (optional): the congestion type
 * @estimated_bitrate: (out) (optional): bit/s
 * @srtt: (out) (optional): smoothed RTT in ns
 * @source: (out) (optional) (transfer none) (nullable): name of the
 *   element that raised it, owned by @event
 *
 * Returns: whether @event is a `GstNetworkCongestion` upstream event
 */
gboolean
gst_twoflow_congestion_event_parse (GstEvent * event,
    GstTwoflowCongestionType * type, guint64 * estimated_bitrate,
    GstClockTime * srtt, const gchar ** source)
{
  g_return_val_if_fail (GST_IS_EVENT (event), FALSE);
  if (GST_EVENT_TYPE (event) != GST_EVENT_CUSTOM_UPSTREAM)
    return FALSE;
  return gst_twoflow_congestion_structure_parse (gst_event_get_structure
      (event), type, estimated_bitrate, srtt, source);
}

/**
 * gst_twoflow_congestion_message_new:
 * @src: (nullable): the element posting it
 * @type: what happened (exactly one flag)
 * @estimated_bitrate: bit/s the transport believes it can carry
 * @srtt: smoothed RTT in ns, %GST_CLOCK_TIME_NONE if unknown
 *
 * Returns: (transfer full): an element message whose source field is the
 * name of @src.
 */
GstMessage *
gst_twoflow_congestion_message_new (GstObject * src,
    GstTwoflowCongestionType type, guint64 estimated_bitrate, GstClockTime srtt)
{
  gchar *name = src ? gst_object_get_name (src) : NULL;
  GstStructure *s = gst_twoflow_congestion_structure_new (type,
      estimated_bitrate, srtt, name);

  g_free (name);
  g_return_val_if_fail (s != NULL, NULL);
  return gst_message_new_element (src, s);
}

/**
 * gst_twoflow_congestion_message_parse:
 * @message: a message
 * @type: (out) (optional): the congestion type
 * @estimated_bitrate: (out) (optional): bit/s
 * @srtt: (out) (optional): smoothed RTT in ns
 * @source: (out) (optional) (transfer none) (nullable): name of the
 *   element that raised it, owned by @message
 *
 * Returns: whether @message is a `GstNetworkCongestion` element message
 */
gboolean
gst_twoflow_congestion_message_parse (GstMessage * message,
    GstTwoflowCongestionType * type, guint64 * estimated_bitrate,
    GstClockTime * srtt, const gchar ** source)
{
  g_return_val_if_fail (GST_IS_MESSAGE (message), FALSE);
  if (GST_MESSAGE_TYPE (message) != GST_MESSAGE_ELEMENT)
    return FALSE;
  return gst_twoflow_congestion_structure_parse (gst_message_get_structure
      (message), type, estimated_bitrate, srtt, source);
}

/**
 * gst_twoflow_congestion_notify:
 * @element: the transport element raising the event
 * @sinkpad: (nullable): pad to send the upstream event from
 * @type: what happened (exactly one flag)
 * @estimated_bitrate: bit/s the transport believes it can carry
 * @srtt: smoothed RTT in ns, %GST_CLOCK_TIME_NONE if unknown
 *
 * What every transport sink does on congestion: sends the event upstream
 * from @sinkpad and posts the same structure as an element message.
 *
 * Returns: whether the upstream event was handled by some element.
 */
gboolean
gst_twoflow_congestion_notify (GstElement * element, GstPad * sinkpad,
    GstTwoflowCongestionType type, guint64 estimated_bitrate, GstClockTime srtt)
{
  gboolean handled = FALSE;

  g_return_val_if_fail (GST_IS_ELEMENT (element), FALSE);
  if (sinkpad)
    handled = gst_pad_push_event (sinkpad,
        gst_twoflow_congestion_event_new (type, estimated_bitrate, srtt,
            GST_OBJECT_NAME (element)));
  gst_element_post_message (element,
      gst_twoflow_congestion_message_new (GST_OBJECT (element), type,
          estimated_bitrate, srtt));
  return handled;
}
