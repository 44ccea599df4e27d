{{/* vim: set filetype=mustache: */}}
{{/*
Chart name, truncated to 63 characters (a Kubernetes name limit).
*/}}
{{- define "oltsim.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Release-qualified name; the release name alone if it already holds the chart name (as in BBSim's chart).
*/}}
{{- define "oltsim.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "oltsim.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Name of one OLT's objects (ConfigMap, Deployment, Service): <fullname>-<olt id>. Call with (dict "root" $ "id" ID).
*/}}
{{- define "oltsim.oltName" -}}
{{- printf "%s-%d" (include "oltsim.fullname" .root | trunc 52 | trimSuffix "-") (int .id) -}}
{{- end -}}

{{/*
Labels that select one OLT's pod. Call with (dict "root" $ "id" ID).
*/}}
{{- define "oltsim.selectorLabels" -}}
app.kubernetes.io/name: {{ include "oltsim.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
oltsim/olt-id: {{ int .id | quote }}
{{- end -}}

{{/*
All labels of one OLT's objects. Call with (dict "root" $ "id" ID).
*/}}
{{- define "oltsim.labels" -}}
{{ include "oltsim.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/component: olt-simulator
app.kubernetes.io/part-of: voltha
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ include "oltsim.chart" .root }}
{{- end -}}

{{/*
The OLTs of the release as YAML {olts: [...]}, each entry the `olt` settings with its own overrides and an id;
fails on a missing or repeated id. Read it with: (fromYaml (include "oltsim.olts" .)).olts
Overrides are copied key by key (not with `merge`, which would let a default replace an override of 0 or false).
*/}}
{{- define "oltsim.olts" -}}
{{- $olts := list -}}
{{- if .Values.olts -}}
{{- range $index, $entry := .Values.olts -}}
{{- if not (hasKey $entry "id") -}}
{{- fail (printf "olts[%d] has no id; every simulated OLT needs its own olt id" $index) -}}
{{- end -}}
{{- $olt := deepCopy $.Values.olt -}}
{{- range $key, $value := $entry -}}
{{- $_ := set $olt $key $value -}}
{{- end -}}
{{- $olts = append $olts $olt -}}
{{- end -}}
{{- else -}}
{{- range $index := until (int .Values.oltCount) -}}
{{- $olt := deepCopy $.Values.olt -}}
{{- $_ := set $olt "id" (add (int $.Values.firstOltId) $index) -}}
{{- $olts = append $olts $olt -}}
{{- end -}}
{{- end -}}
{{- $seen := dict -}}
{{- range $olts -}}
{{- $key := toString (int .id) -}}
{{- if hasKey $seen $key -}}
{{- fail (printf "olt id %s is used twice; every simulated OLT needs its own olt id" $key) -}}
{{- end -}}
{{- $_ := set $seen $key true -}}
{{- end -}}
{{- toYaml (dict "olts" $olts) -}}
{{- end -}}

{{/*
The endpoint string of one listener: ssl: with the mounted certificate when TLS applies to it, else tcp:.
Call with (dict "root" $ "port" PORT "tls" BOOL).
*/}}
{{- define "oltsim.listen" -}}
{{- $tls := .root.Values.tls -}}
{{- if and $tls.enabled .tls -}}
{{- printf "ssl:%d:privateKey=/var/run/secrets/oltsim/tls/tls.key:certKey=/var/run/secrets/oltsim/tls/tls.crt" (int .port) -}}
{{- if $tls.clientCA.secretName -}}
:caCertsDir=/var/run/secrets/oltsim/client-ca
{{- if $tls.clientCA.required -}}
:requireClientCert=yes
{{- end -}}
{{- end -}}
{{- else -}}
{{- printf "tcp:%d" (int .port) -}}
{{- end -}}
{{- end -}}

{{/*
The image reference.
*/}}
{{- define "oltsim.image" -}}
{{- $image := .Values.images.oltsim -}}
{{- printf "%s%s:%s" $image.registry $image.repository (default .Chart.AppVersion $image.tag) -}}
{{- end -}}

{{/*
Fails rendering when the data plane is enabled with anything but VXLAN attachments: TAP interfaces need NET_ADMIN,
/dev/net/tun and root, which this chart's pods do not have.
*/}}
{{- define "oltsim.checkDataplane" -}}
{{- if and .Values.dataplane.enabled (ne (toString .Values.dataplane.attachment) "vxlan") -}}
{{- fail (printf "dataplane.attachment %q: only vxlan runs in this chart's pods (TAP interfaces need NET_ADMIN, /dev/net/tun and root)" (toString .Values.dataplane.attachment)) -}}
{{- end -}}
{{- end -}}
