package k8s

// The parts of the objects the checks read, one type a kind; a
// [Manifest] decodes into the type of its Kind.
type (
	// Metadata is an object's name, labels and annotations.
	Metadata struct {
		Name        string            `yaml:"name"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	}
	// Probe is a container's readiness or liveness probe.
	Probe struct {
		HTTPGet struct {
			Path string `yaml:"path"`
			Port string `yaml:"port"`
		} `yaml:"httpGet"`
		TCPSocket *struct {
			Port string `yaml:"port"`
		} `yaml:"tcpSocket"`
	}
	// Container is one container of a pod template.
	Container struct {
		Name    string   `yaml:"name"`
		Image   string   `yaml:"image"`
		Command []string `yaml:"command"`
		Args    []string `yaml:"args"`
		Ports   []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		Env []struct {
			Name      string `yaml:"name"`
			Value     string `yaml:"value"`
			ValueFrom *struct {
				SecretKeyRef *struct {
					Name     string `yaml:"name"`
					Key      string `yaml:"key"`
					Optional bool   `yaml:"optional"`
				} `yaml:"secretKeyRef"`
			} `yaml:"valueFrom"`
		} `yaml:"env"`
		EnvFrom []struct {
			ConfigMapRef *EnvSource `yaml:"configMapRef"`
			SecretRef    *EnvSource `yaml:"secretRef"`
		} `yaml:"envFrom"`
		ReadinessProbe Probe `yaml:"readinessProbe"`
		LivenessProbe  Probe `yaml:"livenessProbe"`
		Resources      struct {
			Requests map[string]string `yaml:"requests"`
		} `yaml:"resources"`
		SecurityContext struct {
			AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
			ReadOnlyRootFilesystem   bool  `yaml:"readOnlyRootFilesystem"`
			Capabilities             struct {
				Drop []string `yaml:"drop"`
			} `yaml:"capabilities"`
		} `yaml:"securityContext"`
	}
	// EnvSource is a ConfigMap or Secret a container reads its environment from.
	EnvSource struct {
		Name     string `yaml:"name"`
		Optional bool   `yaml:"optional"`
	}
	// PodSecurityContext is a pod template's security context.
	PodSecurityContext struct {
		RunAsNonRoot   bool `yaml:"runAsNonRoot"`
		RunAsUser      int  `yaml:"runAsUser"`
		RunAsGroup     int  `yaml:"runAsGroup"`
		SeccompProfile struct {
			Type string `yaml:"type"`
		} `yaml:"seccompProfile"`
	}
	// Deployment is a Deployment.
	Deployment struct {
		Kind     string   `yaml:"kind"`
		Metadata Metadata `yaml:"metadata"`
		Spec     struct {
			Replicas int `yaml:"replicas"`
			Selector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
			Template struct {
				Metadata Metadata `yaml:"metadata"`
				Spec     struct {
					AutomountServiceAccountToken *bool              `yaml:"automountServiceAccountToken"`
					SecurityContext              PodSecurityContext `yaml:"securityContext"`
					Containers                   []Container        `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	// Service is a Service.
	Service struct {
		Kind     string   `yaml:"kind"`
		Metadata Metadata `yaml:"metadata"`
		Spec     struct {
			Selector map[string]string `yaml:"selector"`
			Ports    []ServicePort     `yaml:"ports"`
		} `yaml:"spec"`
	}
	// ServicePort is one port of a Service.
	ServicePort struct {
		Port       int    `yaml:"port"`
		TargetPort string `yaml:"targetPort"`
	}
	// NetworkPolicy is a NetworkPolicy.
	NetworkPolicy struct {
		Kind string `yaml:"kind"`
		Spec struct {
			PodSelector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"podSelector"`
			PolicyTypes []string `yaml:"policyTypes"`
			Ingress     []struct {
				From  []map[string]any `yaml:"from"`
				Ports []struct {
					Port string `yaml:"port"`
				} `yaml:"ports"`
			} `yaml:"ingress"`
		} `yaml:"spec"`
	}
	// PDB is a PodDisruptionBudget.
	PDB struct {
		Kind string `yaml:"kind"`
		Spec struct {
			MinAvailable int `yaml:"minAvailable"`
			Selector     struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
		} `yaml:"spec"`
	}
	// ConfigMap is a ConfigMap.
	ConfigMap struct {
		Kind     string            `yaml:"kind"`
		Metadata Metadata          `yaml:"metadata"`
		Data     map[string]string `yaml:"data"`
	}
)
