"""Defaulting: what a real server fills in on every write of a Deployment (and its pod
template), so manifests read back — and diffs against them — look as they would live."""

from __future__ import annotations


def deployment(name="web") -> dict:
    return {"metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def test_a_deployment_gets_the_real_defaults(apps):
    d = apps.create_namespaced_deployment("default", deployment())
    assert d.spec.replicas == 1 and d.spec.revision_history_limit == 10 and d.spec.progress_deadline_seconds == 600
    assert d.spec.strategy.type == "RollingUpdate"
    assert (d.spec.strategy.rolling_update.max_surge, d.spec.strategy.rolling_update.max_unavailable) == ("25%", "25%")
    pod = d.spec.template.spec
    assert (pod.restart_policy, pod.termination_grace_period_seconds, pod.dns_policy) == ("Always", 30, "ClusterFirst")
    assert pod.containers[0].image_pull_policy == "Always"  # no tag means :latest
    assert pod.containers[0].termination_message_policy == "File"


def test_an_update_that_leaves_defaults_out_keeps_them_and_the_generation(apps):
    created = apps.create_namespaced_deployment("default", deployment())
    replaced = apps.replace_namespaced_deployment("web", "default", deployment())
    assert replaced.spec.revision_history_limit == 10 and replaced.spec.strategy.type == "RollingUpdate"
    assert replaced.metadata.generation == created.metadata.generation
