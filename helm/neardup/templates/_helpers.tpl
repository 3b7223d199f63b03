{{/* Chart name, truncated to the 63 characters a label value allows. */}}
{{- define "neardup.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Full name of the release's resources: <release>-<chart> unless the release already names it. */}}
{{- define "neardup.fullname" -}}
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

{{- define "neardup.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "neardup.selectorLabels" -}}
app.kubernetes.io/name: {{ include "neardup.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: worker
{{- end -}}

{{- define "neardup.labels" -}}
helm.sh/chart: {{ include "neardup.chart" . }}
{{ include "neardup.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: neardup
{{- end -}}

{{- define "neardup.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "neardup.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "neardup.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* Name of the Secret the chart creates from development values (kafka.sasl.password, ...). */}}
{{- define "neardup.devSecretName" -}}
{{- printf "%s-dev" (include "neardup.fullname" .) -}}
{{- end -}}

{{- define "neardup.saslEnabled" -}}
{{- if hasPrefix "SASL" .Values.kafka.securityProtocol -}}true{{- end -}}
{{- end -}}

{{- define "neardup.kafkaTlsEnabled" -}}
{{- if has .Values.kafka.securityProtocol (list "SSL" "SASL_SSL") -}}true{{- end -}}
{{- end -}}

{{/*
One secret reference as "name/key", or "" when the setting is unused: the existing Secret when
one is named, else the chart's development Secret when a development value is given.
Arguments: (list $ existingSecret key devValue devKey).
*/}}
{{- define "neardup.secretRef" -}}
{{- $root := index . 0 -}}
{{- $existing := index . 1 -}}
{{- $key := index . 2 -}}
{{- $dev := index . 3 -}}
{{- $devKey := index . 4 -}}
{{- if $existing -}}
{{- printf "%s/%s" $existing $key -}}
{{- else if $dev -}}
{{- printf "%s/%s" (include "neardup.devSecretName" $root) $devKey -}}
{{- end -}}
{{- end -}}

{{- define "neardup.kafkaPasswordRef" -}}
{{- if include "neardup.saslEnabled" . -}}
{{- include "neardup.secretRef" (list . .Values.kafka.sasl.existingSecret .Values.kafka.sasl.passwordKey .Values.kafka.sasl.password "kafka-sasl-password") -}}
{{- end -}}
{{- end -}}

{{- define "neardup.redisPasswordRef" -}}
{{- include "neardup.secretRef" (list . .Values.redis.auth.existingSecret .Values.redis.auth.passwordKey .Values.redis.auth.password "redis-password") -}}
{{- end -}}

{{/*
The /check token: an existing Secret, the development token, or (neither, and check.open not
set) a token the chart generates into its own Secret: the web views are closed unless opened.
*/}}
{{- define "neardup.checkTokenRef" -}}
{{- include "neardup.secretRef" (list . .Values.check.auth.existingSecret .Values.check.auth.tokenKey (or .Values.check.auth.token (include "neardup.checkTokenGenerated" .)) "check-token") -}}
{{- end -}}

{{- define "neardup.checkTokenGenerated" -}}
{{- if not (or .Values.check.auth.existingSecret .Values.check.auth.token .Values.check.open) -}}true{{- end -}}
{{- end -}}

{{/* The KEDA kafka scaler's name for the SASL mechanism. */}}
{{- define "neardup.kedaSasl" -}}
{{- $m := .Values.kafka.sasl.mechanism -}}
{{- if eq $m "PLAIN" -}}plaintext{{- else if eq $m "SCRAM-SHA-256" -}}scram_sha256{{- else -}}scram_sha512{{- end -}}
{{- end -}}

{{/*
Refuse values that would deploy something broken or leak a secret. Included by every template
that is always rendered, so `helm template`, `helm lint` and `helm install` all stop here.
*/}}
{{- define "neardup.validate" -}}
{{- $v := .Values -}}
{{- $partitions := int $v.kafka.topics.partitions -}}
{{- $hpa := $v.autoscaling.hpa.enabled -}}
{{- $keda := $v.autoscaling.keda.enabled -}}
{{- if and $hpa $keda -}}
{{- fail "autoscaling.hpa.enabled and autoscaling.keda.enabled are exclusive: two autoscalers would fight over the replica count" -}}
{{- end -}}
{{- if gt (int $v.kafka.topics.minInsyncReplicas) (int $v.kafka.topics.replication) -}}
{{- fail (printf "kafka.topics.minInsyncReplicas (%d) must be <= kafka.topics.replication (%d): no write could be acknowledged" (int $v.kafka.topics.minInsyncReplicas) (int $v.kafka.topics.replication)) -}}
{{- end -}}
{{- if and (not $hpa) (not $keda) (gt (int $v.replicaCount) $partitions) -}}
{{- fail (printf "replicaCount (%d) must be <= kafka.topics.partitions (%d): a consumer group gives each partition to one consumer, extra workers would sit idle" (int $v.replicaCount) $partitions) -}}
{{- end -}}
{{- if and $hpa (gt (int $v.autoscaling.hpa.maxReplicas) $partitions) -}}
{{- fail (printf "autoscaling.hpa.maxReplicas (%d) must be <= kafka.topics.partitions (%d): a consumer group gives each partition to one consumer" (int $v.autoscaling.hpa.maxReplicas) $partitions) -}}
{{- end -}}
{{- if and $hpa (gt (int $v.autoscaling.hpa.minReplicas) (int $v.autoscaling.hpa.maxReplicas)) -}}
{{- fail "autoscaling.hpa.minReplicas must be <= autoscaling.hpa.maxReplicas" -}}
{{- end -}}
{{- if and $keda (gt (int $v.autoscaling.keda.maxReplicaCount) $partitions) -}}
{{- fail (printf "autoscaling.keda.maxReplicaCount (%d) must be <= kafka.topics.partitions (%d): a consumer group gives each partition to one consumer" (int $v.autoscaling.keda.maxReplicaCount) $partitions) -}}
{{- end -}}
{{- if and $keda (gt (int $v.autoscaling.keda.minReplicaCount) (int $v.autoscaling.keda.maxReplicaCount)) -}}
{{- fail "autoscaling.keda.minReplicaCount must be <= autoscaling.keda.maxReplicaCount" -}}
{{- end -}}
{{- if and $v.kafka.sasl.existingSecret $v.kafka.sasl.password -}}
{{- fail "set kafka.sasl.existingSecret or kafka.sasl.password (development only), not both" -}}
{{- end -}}
{{- if and $v.redis.auth.existingSecret $v.redis.auth.password -}}
{{- fail "set redis.auth.existingSecret or redis.auth.password (development only), not both" -}}
{{- end -}}
{{- if and $v.check.auth.existingSecret $v.check.auth.token -}}
{{- fail "set check.auth.existingSecret or check.auth.token (development only), not both" -}}
{{- end -}}
{{- if and $v.check.open (or $v.check.auth.existingSecret $v.check.auth.token) -}}
{{- fail "check.open serves the web views without a token: unset check.auth.existingSecret and check.auth.token, or leave check.open false" -}}
{{- end -}}
{{- if include "neardup.saslEnabled" . -}}
{{- if not $v.kafka.sasl.username -}}
{{- fail (printf "kafka.securityProtocol=%s needs kafka.sasl.username" $v.kafka.securityProtocol) -}}
{{- end -}}
{{- if not (include "neardup.kafkaPasswordRef" .) -}}
{{- fail (printf "kafka.securityProtocol=%s needs kafka.sasl.existingSecret (or kafka.sasl.password for development)" $v.kafka.securityProtocol) -}}
{{- end -}}
{{- end -}}
{{- if and $v.kafka.tls.existingSecret (not (include "neardup.kafkaTlsEnabled" .)) -}}
{{- fail "kafka.tls.existingSecret is set but kafka.securityProtocol is neither SSL nor SASL_SSL" -}}
{{- end -}}
{{- if ne (empty $v.kafka.tls.certKey) (empty $v.kafka.tls.keyKey) -}}
{{- fail "kafka.tls.certKey and kafka.tls.keyKey go together (mutual TLS)" -}}
{{- end -}}
{{- if contains "@" $v.redis.url -}}
{{- fail "redis.url must not contain credentials (user:password@): put the password in a Secret and name it in redis.auth.existingSecret" -}}
{{- end -}}
{{- if and $v.redis.tls.existingSecret (not (hasPrefix "rediss://" $v.redis.url)) -}}
{{- fail "redis.tls.existingSecret needs a rediss:// redis.url" -}}
{{- end -}}
{{- if and (gt (int $v.redis.waitReplicas) 0) (ge (float64 $v.redis.waitTimeoutMs) (mulf $v.redis.timeoutS 1000)) -}}
{{- fail (printf "redis.waitTimeoutMs (%d) must be shorter than redis.timeoutS (%v s): the client would give up on the WAIT before Redis answers" (int $v.redis.waitTimeoutMs) $v.redis.timeoutS) -}}
{{- end -}}
{{- end -}}

{{/* Environment of the worker beyond the ConfigMap: secrets by reference, never by value. */}}
{{- define "neardup.env" -}}
{{- $v := .Values -}}
{{- if include "neardup.saslEnabled" . }}
- name: NEARDUP_KAFKA_SASL_USERNAME
  value: {{ $v.kafka.sasl.username | quote }}
{{- $ref := splitn "/" 2 (include "neardup.kafkaPasswordRef" .) }}
- name: NEARDUP_KAFKA_SASL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $ref._0 }}
      key: {{ $ref._1 }}
{{- end }}
{{- with include "neardup.redisPasswordRef" . }}
{{- $ref := splitn "/" 2 . }}
- name: NEARDUP_REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $ref._0 }}
      key: {{ $ref._1 }}
{{- end }}
{{- with include "neardup.checkTokenRef" . }}
{{- $ref := splitn "/" 2 . }}
- name: NEARDUP_CHECK_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ $ref._0 }}
      key: {{ $ref._1 }}
{{- end }}
{{- with $v.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Where the worker reads the per-namespace policies (namespaces-configmap.yaml, mounted). */}}
{{- define "neardup.namespacesDir" -}}/etc/neardup/namespaces{{- end -}}
{{- define "neardup.namespacesFile" -}}{{ include "neardup.namespacesDir" . }}/namespaces.toml{{- end -}}

{{/*
One value of the namespaces file in TOML: strings as JSON strings (valid TOML basic strings),
booleans bare, numbers bare with whole ones as integers (values files give every number as a
float, and the worker refuses 3.0 where a count is due).
*/}}
{{- define "neardup.tomlValue" -}}
{{- if kindIs "string" . -}}
{{- toJson . -}}
{{- else if kindIs "bool" . -}}
{{- ternary "true" "false" . -}}
{{- else if kindIs "float64" . -}}
{{- if eq . (float64 (int64 .)) -}}{{ int64 . }}{{- else -}}{{ . }}{{- end -}}
{{- else if or (kindIs "int" .) (kindIs "int64" .) -}}
{{- . -}}
{{- else -}}
{{- fail (printf "namespaces: %v is not a string, number or boolean" .) -}}
{{- end -}}
{{- end -}}
