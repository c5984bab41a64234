"""What each Kubernetes minor does, where minors differ: one table, read by the suites (to
assert the right outcome per cell) and by the readiness report (to explain the difference).
Every entry names the upstream source it was checked against."""

from __future__ import annotations

Version = tuple[int, int]


def claim_controller_follows_bridged_pods(version: Version) -> bool:
    """Does the resourceclaim controller act on a bridged pod's own events? Without it:
    - a completed pod keeps its scheduler-created claim allocated and reserved until the pod
      object is deleted (the garbage collector then removes the claim with the pod);
    - a claim deleted while its pod still exists (a namespace deletion deletes pods and claims
      side by side) keeps the pod in status.reservedFor and its delete-protection finalizer
      after the pod is gone: the claim, its device and the namespace stay until the claim
      changes again (any update requeues it) or the controller-manager restarts (it syncs
      every claim when it starts).

    1.34.4: no. pkg/controller/resourceclaim/controller.go enqueuePod returns at once for a pod
    with no spec.resourceClaims ("Nothing to do for it at all"), which a bridged pod never has.
    1.35+: yes. 1.35.4 controller.go enqueuePod reads pod.Status.ExtendedResourceClaimStatus
    ("Extended resource claims are stored in ..."); 1.36.3 and 1.37.2 the same.
    """
    return version >= (1, 35)


def class_add_requeues_fit_rejected_pod(version: Version) -> bool:
    """Does a new DeviceClass mapping a pod's extended resource move the pod, rejected before
    as "Insufficient <resource>", back to the scheduling queue?

    1.34.4: no. NodeResourcesFit rejected it and registers only Pod and Node events
    (pkg/scheduler/framework/plugins/noderesources/fit.go EventsToRegister), so the pod waits
    for a Node or Pod event, or the unschedulable queue's 5-minute flush.
    1.35+: yes. 1.37.2 fit.go registers DeviceClass Add|Update with
    isSchedulableAfterDeviceClassEvent; the 1.35 and 1.36 cells pass the test.
    """
    return version >= (1, 35)


def bridge_reaches_nodes_a_device_plugin_left(version: Version) -> bool:
    """Does a bridged pod schedule onto a node whose device plugin is gone? The kubelet keeps a
    removed plugin's resource in the node's status at 0, never deletes it, "to indicate that
    the resource is managed by device plugin" (pkg/kubelet/nodestatus/setters.go @ v1.34.4).

    1.34.4: no. NodeResourcesFit leaves a request to DRA only when the resource is absent from
    the node's allocatable (noderesources/fit.go fitsRequest `!okScalar`), so the pod is
    "Insufficient nvidia.com/gpu" there until the key is removed from the node's status.
    1.35+: yes. fit.go @ v1.35.4 delegates when allocatable is 0 (`allocatable > 0` keeps it).
    """
    return version >= (1, 35)


def device_plugin_wins_where_it_advertises(version: Version) -> bool:
    """On a node that serves one extended resource name both ways (the device plugin's
    allocatable > 0 and DRA devices of a DeviceClass mapping the name), does kube-scheduler give a
    pod asking for the name the device plugin's devices, with no scheduler-created claim
    (kubernetes#139141)?

    1.34.4: yes, and already when the name is listed at all (even at 0: the leftover rule,
    bridge_reaches_nodes_a_device_plugin_left): pkg/scheduler/framework/plugins/noderesources/
    fit.go lines 480-483 leave a request to DRA only `!okScalar`, and dynamicresources/
    dynamicresources.go lines 797-803 request 0 devices for a name the node lists ("node provides
    the resource via device plugin").
    1.35.4: yes: noderesources/fit.go shouldDelegateResourceToDRA line 248 (`allocatable > 0`:
    not delegated); dynamicresources/extendeddynamicresources.go lines 241-247 claim devices only
    `isBackedByDRA && allocatable == 0`.
    1.36.3: the same, fit.go line 280 and extendeddynamicresources.go lines 240-246.
    1.37.2: the same, fit.go line 279 and extendeddynamicresources.go lines 241-247.
    1.38.0-beta.0: the same, the delegation moved to noderesources/../helper/resource_fit.go
    ShouldDelegateResourceToDRA line 49; extendeddynamicresources.go lines 241-247.
    Asserted by suites/bridging/test_mixed_pools.py (the `on-both` pod) on every minor.
    """
    return version >= (1, 34)


def init_containers_reuse_bridged_devices(version: Version) -> bool:
    """Do init containers reuse the devices of the long-lived containers in a bridged pod's
    claim (requests sized as kubelet sizes resources: max(init, sum of containers))?

    1.34.4: no. dynamicresources.go createDeviceRequests makes one request per (container,
    resource) over initContainers + containers, so init 3 + main 2 + aux 1 asks for 6 devices.
    1.35+: yes; the 1.35 and 1.36 cells pass the test (1.37.2 extendeddynamicresources.go).
    """
    return version >= (1, 35)


def quota_counts_implicit_device_class_name(version: Version) -> bool:
    """Does ResourceQuota count devices under `requests.deviceclass.resource.kubernetes.io/<class>`?

    1.34.4: no. pkg/quota/v1/evaluator/core/pods.go and resource_claims.go know no
    ResourceDeviceClassPrefix: usage appears under `requests.<extended resource>` and
    `<class>.deviceclass.resource.k8s.io/devices` only.
    1.35+: yes. 1.37.2 pods.go resourceRequestsDeviceClassPrefix; the 1.35 and 1.36 cells pass.
    """
    return version >= (1, 35)


def implicit_names_recognized(version: Version) -> bool:
    """Does the scheduler treat `deviceclass.resource.kubernetes.io/<class>` as a DRA-backed
    extended resource at all?

    1.34.4: no, and the pod is bound with no claim and no device. The name lies in the
    kubernetes.io namespace, so v1helper.IsExtendedResourceName (pkg/apis/core/v1/helper/
    helpers.go, IsPrefixedNativeResource) is false: dynamicresources.go
    hasDeviceClassMappedExtendedResource skips it, and noderesources/fit.go leaves the request
    to DRA because its resourceToDeviceClass is nil (fitsRequest: "no device class mapping
    provided"). The cluster promises the pod a device that nothing allocates.
    1.35+: yes. 1.37.2 pkg/scheduler/util/utils.go IsDRAExtendedResourceName adds the prefix;
    the 1.35 and 1.36 cells pass the same tests.
    """
    return version >= (1, 35)


def implicit_name_alongside_explicit(version: Version) -> bool:
    """Does `deviceclass.resource.kubernetes.io/<class>` map to a class that also sets
    extendedResourceName?

    1.34.4: no — pkg/scheduler/framework/plugins/dynamicresources/extended/util.go
    DeviceClassMapping adds the implicit name only when ExtendedResourceName is nil.
    1.35.4+: yes — k8s.io/dynamic-resource-allocation deviceclass/extendedresourcecache
    "Always add the default mapping".
    """
    return version >= (1, 35)


def extended_claim_blocks_owner_deletion(version: Version) -> bool:
    """Does the scheduler-created claim's ownerReference to its pod set blockOwnerDeletion?

    1.34.4: yes — dynamicresources.go builds the OwnerReference with BlockOwnerDeletion: true.
    1.35.4+: no — extendeddynamicresources.go sets only APIVersion, Kind, Name, UID, Controller.
    """
    return version < (1, 35)


def governing_gate(gate: str, version: Version) -> str:
    """The feature gate that governs `gate`'s behaviour on this minor: the gate itself, or the
    older gate that carried the behaviour before `gate` existed. Test markers name the newest
    gate; fixtures.requirements checks the cell against this one.

    DRADeviceTaintRules: from 1.35.4 its own gate (pkg/features/kube_features.go @ v1.35.4,
    alpha, depends on DRADeviceTaints). 1.34.4 has no such gate; DeviceTaintRules work under
    DRADeviceTaints there: the API serves them in resource.k8s.io/v1alpha3
    (pkg/registry/resource/rest/storage_resource.go, with runtime-config), the scheduler applies
    them when DRADeviceTaints is on (pkg/scheduler/scheduler.go resourceSliceTrackerOpts
    TaintInformer), and kube-controller-manager runs the eviction controller, rules included,
    with DynamicResourceAllocation and DRADeviceTaints (cmd/kube-controller-manager/app/core.go
    newDeviceTaintEvictionControllerDescriptor; pkg/controller/devicetainteviction
    device_taint_eviction.go TaintInformer), all @ v1.34.4.
    """
    if gate == "DRADeviceTaintRules" and version < (1, 35):
        return "DRADeviceTaints"
    return gate


def device_taint_rule_api(version: Version) -> str:
    """The group/version DeviceTaintRule is written with (the dra-all profiles serve it).

    1.34.4 / 1.35: resource.k8s.io/v1alpha3 only (k8s.io/api resource/v1alpha3/types.go @
    v0.34.4). 1.36: v1beta2, the beta (k8s.io/api resource/v1beta2/types.go @ v0.36.1;
    pkg/features DRADeviceTaintRules beta in 1.36). 1.37: v1, GA and on by default
    (k8s.io/api resource/v1/types.go @ v0.37.2; kube_features.go @ v1.37.2).
    """
    if version >= (1, 37):
        return "resource.k8s.io/v1"
    if version >= (1, 36):
        return "resource.k8s.io/v1beta2"
    return "resource.k8s.io/v1alpha3"


def device_taint_rule_status_checked(version: Version) -> bool:
    """Is the EvictionInProgress condition of a NoSchedule rule checked on this minor?

    1.35.4+: yes — pkg/controller/devicetainteviction/device_taint_eviction.go
    maybeUpdateRuleStatus sets Status False, Reason "OtherEffect", Message "Eviction only
    happens for the NoExecute effect." for a NoSchedule rule (@ v1.35.4, v1.36.3, v1.37.2; the
    status is in k8s.io/api resource/v1alpha3/types.go DeviceTaintRuleStatus @ v0.35.4).
    1.34.4: the API has no status (resource/v1alpha3/types.go @ v0.34.4).
    """
    return version >= (1, 35)


def no_execute_evicts_bridged_pods(version: Version) -> bool:
    """Does a NoExecute device taint evict a pod that got its device through an extended
    resource (DRAExtendedResource: its claim is named in pod.status.extendedResourceClaimStatus,
    not in spec.resourceClaims)?

    1.36.3: no — pkg/controller/devicetainteviction/device_taint_eviction.go:1581 handlePod
    walks ``pod.Spec.ResourceClaims`` only. 1.37.2 and 1.38.0-beta.0: yes — the same function
    (:1581 @ v1.37.2, :1592 @ v1.38.0-beta.0) walks ``resourceclaim.PodClaims(pod)``, which
    also yields ``Status.ExtendedResourceClaimStatus.ResourceClaimName``
    (k8s.io/dynamic-resource-allocation resourceclaim/pod.go:54 @ v0.37.2, v0.38.0-beta.0).
    The 1.38 changelog names the fix (CHANGELOG-1.38.md, kubernetes#142289); 1.37.0-rc.0 still
    walks spec.resourceClaims only, so 1.37 has it from a patch release (1.37.2 pinned here).
    """
    return version >= (1, 37)


def allocation_result_copies_tolerations(version: Version) -> bool:
    """Does the scheduler copy a request's device tolerations into the allocation result
    (with DRADeviceTaints on, which picks the incubating or experimental allocator)?

    1.34.4: no — k8s.io/dynamic-resource-allocation structured/internal/*/allocator_*.go @
    v0.34.4 read the tolerations only to match taints.
    1.35.4+: yes — incubating/allocator_incubating.go and experimental/allocator_experimental.go
    set ``Tolerations: internal.lookupRequest(claim).tolerations()`` @ v0.35.4 (the stable
    allocator too @ v0.36.3, v0.37.2).
    """
    return version >= (1, 35)


def invalid_extended_resource_name_message(version: Version, value: str) -> str:
    """The API server's message for an invalid DeviceClass spec.extendedResourceName.

    1.34.4, 1.35.4, 1.36.3: the handwritten check — pkg/apis/resource/validation
    validateDeviceClassSpec "must be a valid extended resource name". From 1.35.4 it is
    MarkCoveredByDeclarative, but the declarative error only shadows it: @ v1.35.4 the
    DeclarativeValidationTakeover gate is off by default (k8s.io/apiserver pkg/features
    kube_features.go, pkg/registry/rest/validate.go @ v0.35.4); @ v1.36.3 the tag is
    ``+k8s:alpha(since: "1.36")`` (k8s.io/api resource/v1/types.go @ v0.36.3) and alpha
    declarative errors are never enforced (validate.go ValidateDeclarativelyWithMigrationChecks
    @ v0.36.3).
    1.37.2: declarative validation answers instead (``+k8s:beta(since: "1.37")``, enforced with
    DeclarativeValidationBeta on by default): k8s.io/apimachinery pkg/api/validate/strfmt.go @
    v0.37.2 "a name must be a domain-prefixed path, such as 'example.com/my-prop'".
    """
    if version >= (1, 37):
        return (
            f'Invalid value: "{value}": '
            + "a name must be a domain-prefixed path, such as 'example.com/my-prop'"
        )
    return f'Invalid value: "{value}": must be a valid extended resource name'


def unallocated_device_status_value(version: Version, driver: str, pool: str, device: str) -> str:
    """How the API server prints the device of a status.devices entry the claim was not
    allocated ("Invalid value: <this>: must be an allocated device in the claim").

    The value is structured.SharedDeviceID, printed as JSON. 1.34.4: its fields are
    draapi.UniqueString (unique.Handle) with no MarshalJSON, so every field prints as {} and the
    message does not say which device (observed on the 1.34 cell; k8s.io/dynamic-resource-
    allocation structured/internal/allocatedstate.go @ v0.34.4).
    1.35.4+: the names print — api/uniquestring.go UniqueString.MarshalJSON @ v0.35.4, v0.36.3
    and v0.37.2 (SharedDeviceID now in structured/schedulerapi/types.go); observed on the 1.37
    cell.
    """
    if version >= (1, 35):
        return f'{{"Driver":"{driver}","Pool":"{pool}","Device":"{device}","ShareID":""}}'
    return '{"Driver":{},"Pool":{},"Device":{},"ShareID":{}}'


def prioritized_list_scores_nodes(version: Version) -> bool:
    """Does the scheduler prefer the node where a higher-ranked `firstAvailable` subrequest fits?

    1.34.4: no — pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go has no
    Score; on the 1.34 cell the pod took the fallback on another node in 2 of 3 runs.
    1.35.4+: yes — dynamicresources.go Score/computeScore adds
    FirstAvailableDeviceRequestMaxSize - index per allocated subrequest (@ v1.35.4, v1.36.3,
    v1.37.2), the plugin enabled with weight 2 (pkg/scheduler/apis/config/v1/default_plugins.go).
    """
    return version >= (1, 35)


def binding_timeout_configurable(version: Version) -> bool:
    """Can the scheduler's wait for binding conditions be shortened (DynamicResourcesArgs
    bindingTimeout), so a test can watch it expire?

    1.34.4: no — dynamicresources.go BindingTimeoutDefaultSeconds = 600, a constant; neither
    pkg/scheduler/apis/config types_pluginargs.go nor k8s.io/kube-scheduler config/v1 types.go
    @ v0.34.4 has the field.
    1.35.4, 1.36.3, 1.37.2: yes — pkg/scheduler/apis/config/types_pluginargs.go
    DynamicResourcesArgs.BindingTimeout, served as `bindingTimeout` in k8s.io/kube-scheduler
    config/v1 types.go (@ v0.35.4, v0.36.3, v0.37.2), defaulted to 600 s by v1/defaults.go
    SetDefaults_DynamicResourcesArgs; validation_pluginargs.go ValidateDynamicResourcesArgs
    accepts >= 1 s with DRADeviceBindingConditions and DRAResourceClaimDeviceStatus on, and
    forbids it otherwise; dynamicresources.go isClaimTimeout reads it.
    """
    return version >= (1, 35)


def kubelet_prepares_bridged_claim(kubelet: Version) -> bool:
    """Does a kubelet of this minor, with its default gates, prepare the scheduler-created
    claim of a bridged pod, so the containers get the devices the claim holds?

    Every kubelet admits the pod: pkg/kubelet/lifecycle/predicate.go@v1.34.4 (the same
    function @v1.35.4; @v1.37.2 it also skips resources the pod's claim backs) drops extended
    resources the node does not advertise before its fit check (removeMissingExtendedResources).
    It prepares the special claim only with DRAExtendedResource on (pkg/kubelet/cm/dra/manager.go
    @v1.34.4 and @v1.35.4 read pod.Status.ExtendedResourceClaimStatus behind the gate), which is
    alpha and off in 1.34 and 1.35 (pkg/features/kube_features.go@v1.35.4 has only the 1.34
    alpha entry), beta and on in 1.36, GA in 1.37 (kube_features.go@v1.37.2). So on a 1.34 or
    1.35 kubelet the bridged pod runs without its device while its claim stays allocated: not
    Pending, and no error anywhere.
    """
    return kubelet >= (1, 36)


def shared_device_holds_counters(version: Version) -> bool:
    """Does a device that allows multiple allocations (KEP-5075) keep its shared counters
    (KEP-4815) charged while one of its shares is allocated, so another device of the same
    counter set cannot over-commit them?

    1.35.4: no (observed on the 1.35 cell: the partition is allocated beside two shares of the
    whole GPU, 120Gi of an 80Gi set). The allocator (k8s.io/dynamic-resource-allocation
    structured/internal/experimental/allocator_experimental.go checkAvailableCounters @ v0.35.4)
    counts only allocatedState.AllocatedDevices, and the scheduler files a result with a shareID
    under AllocatedSharedDeviceIDs instead (pkg/scheduler/framework/plugins/dynamicresources/
    allocateddevices.go foreachAllocatedDevice @ v1.35.4).
    1.36.3, 1.37.2: yes. checkAvailableCounters asks internal.IsDeviceAllocated, which also
    matches AllocatedSharedDeviceIDs (structured/internal/allocatedstate.go @ v0.36.3, v0.37.2);
    a further share of an allocated device skips the check (skipCounterCheck in
    incubating/allocator_incubating.go allocateDevice), so the counters are charged once.
    1.34.4: yes as observed on the 1.34 cell (the partition waits until both shares are gone),
    though the v0.34.4 allocator reads AllocatedDevices alone like v0.35.4; what else holds the
    counters there (counters and devices share one slice before 1.35) was not traced here.
    """
    return version != (1, 35)


def ambiguous_mapping_outcome(version: Version, classes_oldest_first: list[str]) -> str:
    """What kube-scheduler does with an extended resource name that several DeviceClasses map
        (`classes_oldest_first`: by creationTimestamp, and among equals the lower name last, so the
    class 1.35+ prefers is last), in the scan's words.

        1.35.4, 1.36.3, 1.37.2: the newest class wins (ties: the lower name), and deleting any of
        them drops the name: k8s.io/dynamic-resource-allocation deviceclass/extendedresourcecache/
        extendedresourcecache.go @ v0.37.2, updateResourceName2class line 165 ("we prefer the newer
        DeviceClass. The name serves as tie-breaker", the choice at lines 172-186),
        removeResourceName2class lines 229-237
        (deletes the name's entry whatever class it points to; nothing re-adds the class that
        remains until it is updated, or kube-scheduler restarts and its informer lists every class
        again). The file is the same @ v0.36.3 and differs @ v0.35.4 only in log lines; the cache
        is kube-scheduler's (pkg/scheduler/framework/plugins/dynamicresources/dra_manager.go:72 @
        v1.37.2). Updating the class that remains restores the name for new pods, not for a pod
    NodeResourcesFit rejected meanwhile ("Insufficient <name>"): an update that keeps
    extendedResourceName is QueueSkip for it (pkg/scheduler/framework/plugins/noderesources/
    fit.go isSchedulableAfterDeviceClassEvent lines 574-576 @ v1.37.2), so it waits for another
    event or the unschedulable pods' 5-minute flush. Observed on the 1.37 cell
    (suites/scan/test_ambiguous_mapping.py): the newest wins, deleting it drops the name, the
    update gives it back to new pods only. Deleting the older class is read from the source
    (line 237 deletes the entry unconditionally), not staged.
        1.34.4: whichever class the lister returns last, every scheduling cycle:
        pkg/scheduler/framework/plugins/dynamicresources/extended/util.go DeviceClassMapping lines
        31-36 @ v1.34.4 (a map overwritten in list order), so the choice is not stable.
    """
    if version < (1, 35):
        return "kube-scheduler uses whichever the informer lists last, not always the same one"
    newest = classes_oldest_first[-1]
    return (
        f"kube-scheduler maps it to the newest, {newest}, and drops the name when any of them "
        "is deleted until it restarts"
    )


def deleting_a_class_drops_a_shared_mapping(version: Version) -> bool:
    """After one of two DeviceClasses sharing an extendedResourceName is deleted, does
    kube-scheduler stop mapping the name (pods asking for it: "Insufficient <name>") until the
    class that remains is updated or the scheduler restarts? The source and what was observed:
    ambiguous_mapping_outcome. 1.34.4 rebuilds the mapping every cycle, so no.
    """
    return version >= (1, 35)


def dynamic_resource_allocation_gate(version: Version) -> bool:
    """Does the minor still have the DynamicResourceAllocation feature gate (GA and locked since
    1.34), so a component or scheduler_perf test case may name it?

    1.34.4-1.37.2: yes — pkg/features/kube_features.go; scheduler_perf serves resource.k8s.io
    and runs the resourceclaim controller only for a test case that enables it
    (test/integration/scheduler_perf/util.go mustSetupCluster @ v1.37.2 lines 97 and 150).
    1.38.0-beta.0: no — the gate is gone from pkg/features/kube_features.go (a component that
    is given it refuses to start), and scheduler_perf runs the resourceclaim controller for
    every test case (util.go line 155 @ v1.38.0-beta.0).
    """
    return version < (1, 38)


def gang_unschedulable_message(minor: str) -> str:
    """The PodGroup condition message when a gang of 5 pods fits 4 (every pod evaluated, none to
    preempt), on the minors that write one (1.36+).

    1.36.3: schedule_one_podgroup.go errPodGroupUnschedulable.
    1.37.2: pkg/scheduler/framework/plugins/gangscheduling/gangscheduling.go line 496
    PlacementFeasible "minCount (%d) cannot be satisfied: %d scheduled, %d remaining", plus the
    pod group preemption status (framework/preemption/podgrouppreemption.go).
    1.38.0-beta.0: gangscheduling.go line 240 reworded, counting unschedulable and not-evaluated
    pods apart: "scheduling policy's minimum threshold (%d) cannot be satisfied: %d scheduled,
    %d unschedulable, %d not-evaluated"; between it and the preemption part (as before:
    framework/plugins/defaultpreemption/default_preemption.go line 510,
    framework/preemption/podgrouppreemption.go line 86) now comes the status of the DRA plugin's
    PodGroupPostFilter, plugins/dynamicresources/dynamicresources.go line 1273 "deallocation and
    deletion of ResourceClaims completed" (the same status @ v1.37.2 line 1284 did not reach the
    condition; observed on the 1.38 cell for claim and extended-resource gangs alike).
    """
    preemption = "pod group preemption: No preemption victims found for incoming preemptor"
    return {
        "1.36": "pod group is unschedulable",
        "1.37": f"minCount (5) cannot be satisfied: 4 scheduled, 0 remaining, {preemption}",
        "1.38": "scheduling policy's minimum threshold (5) cannot be satisfied: 4 scheduled, "
        "1 unschedulable, 0 not-evaluated, deallocation and deletion of ResourceClaims completed, "
        + preemption,
    }[minor]
