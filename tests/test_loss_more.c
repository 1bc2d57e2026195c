/* tests/test_loss_more.c: cross_entropy_ex, nll_loss_ex and ctc_loss (generator/parts/loss.h):
   values and gradients against PyTorch 1.13 (torch.nn.functional in float64, the numbers pasted
   here; the gradients are those of sum(loss * sin(1 .. n))), the fused backward against the
   composed one (create_graph), the f32 vector rows against the reference kernels, the gradient
   checks the registry sweep runs (gradcheck_NAME) and the bad-input cases (bad_input_NAME). */
#include "test.h"

/* ---- PyTorch's numbers ---- */
static const double ce_n_0_none[4] = {1.674197907554462, 0.0, 1.976112950850973, 2.532645329017272};
static const double ce_n_0_none_g[20] = {0.09567467411684925, 0.021347905357841406, -0.6837301145241441, 0.5237181328362769, 0.04298940221317663, 0.0, 0.0, 0.0, 0.0, 0.0, 0.004151616176375913, 0.03390280310805012, 0.0682718615496744, 0.015233511401210285, -0.12155979223531073, -0.1634418036338278, 0.696675615923063, -0.02701674842960259, -0.40200196871086613, -0.10421509514876645};
static const double ce_n_0_mean[1] = {2.060985395807569};
static const double ce_n_0_mean_g[20] = {0.03189155803894975, 0.007115968452613802, -0.2279100381747147, 0.17457271094542562, 0.014329800737725542, 0.0, 0.0, 0.0, 0.0, 0.0, 0.008251758203314453, 0.06738525956568975, 0.13569724889400855, 0.03027814887742148, -0.24161241554043425, 0.06057570560140089, -0.25820577154408964, 0.010013096789149696, 0.1489921939577331, 0.03862477519580595};
static const double ce_n_0_sum[1] = {6.1829561874227075};
static const double ce_n_0_sum_g[20] = {0.09567467411684925, 0.021347905357841406, -0.6837301145241441, 0.5237181328362769, 0.04298940221317663, 0.0, 0.0, 0.0, 0.0, 0.0, 0.02475527460994336, 0.20215577869706927, 0.4070917466820257, 0.09083444663226445, -0.7248372466213028, 0.18172711680420267, -0.774617314632269, 0.030039290367449088, 0.44697658187319933, 0.11587432558741785};
static const double ce_w_0_none[4] = {0.837098953777231, 0.0, 1.5808903606807785, 5.065290658034544};
static const double ce_w_0_none_g[20] = {0.04783733705842463, 0.010673952678920703, -0.34186505726207206, 0.26185906641813844, 0.021494701106588316, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0033212929411007303, 0.027122242486440094, 0.05461748923973953, 0.012186809120968228, -0.09724783378824858, -0.3268836072676556, 1.393351231846126, -0.05403349685920518, -0.8040039374217323, -0.2084301902975329};
static const double ce_w_0_mean[1] = {2.2676605977250164};
static const double ce_w_0_mean_g[20] = {0.014496162744977158, 0.003234531114824455, -0.10359547189759759, 0.07935123224792073, 0.006513545789875248, 0.0, 0.0, 0.0, 0.0, 0.0, 0.006001278693319603, 0.04900746150231983, 0.09868890828655169, 0.022020471910851987, -0.1757181203930431, 0.11013764654800162, -0.46946503917107213, 0.01820563052572672, 0.2708948981049693, 0.07022686399237445};
static const double ce_w_0_sum[1] = {7.483279972492554};
static const double ce_w_0_sum_g[20] = {0.04783733705842463, 0.010673952678920703, -0.34186505726207206, 0.26185906641813844, 0.021494701106588316, 0.0, 0.0, 0.0, 0.0, 0.0, 0.01980421968795469, 0.16172462295765544, 0.3256733973456206, 0.07266755730581156, -0.5798697972970422, 0.36345423360840534, -1.549234629264538, 0.060078580734898177, 0.8939531637463987, 0.2317486511748357};
static const double ce_n_2_none[4] = {1.7781979075544623, 0.0, 1.976112950850973, 2.4266453290172723};
static const double ce_n_2_none_g[20] = {0.062015834724533384, -0.012310934034474457, -0.5490947569548807, 0.490059293443961, 0.009330562820860769, 0.0, 0.0, 0.0, 0.0, 0.0, -0.0014931841460187746, 0.028258002785655437, 0.06262706122727973, 0.0095887110788156, -0.09898059094573196, -0.13316970382151072, 0.5755872166737946, 0.0032553513827145338, -0.37172986889854914, -0.07394299533644935};
static const double ce_n_2_mean[1] = {2.0603187291409024};
static const double ce_n_2_mean_g[20] = {0.0206719449081778, -0.004103644678158151, -0.18303158565162694, 0.16335309781465368, 0.003110187606953592, 0.0, 0.0, 0.0, 0.0, 0.0, -0.0029678549274574978, 0.056165646434917824, 0.12447763576323666, 0.01905853574664954, -0.19673396301734647, 0.049356092470628964, -0.21332731902100188, -0.0012065163416222543, 0.1377725808269612, 0.02740516206503401};
static const double ce_n_2_sum[1] = {6.180956187422708};
static const double ce_n_2_sum_g[20] = {0.062015834724533384, -0.012310934034474457, -0.5490947569548807, 0.490059293443961, 0.009330562820860769, 0.0, 0.0, 0.0, 0.0, 0.0, -0.008903564782372503, 0.1684969393047534, 0.37343290728970985, 0.057175607239948585, -0.5902018890520394, 0.14806827741188683, -0.6399819570630056, -0.0036195490248667746, 0.4133177424808835, 0.08221548619510198};
static const double ce_w_2_none[4] = {1.2076930775744201, 0.0, 1.7311704931420486, 4.484206242759643};
static const double ce_w_2_none_g[20] = {0.026807554649532866, -0.053825802598475955, -0.25372558359998504, 0.2805016008640532, 0.00024223068487493944, 0.0, 0.0, 0.0, 0.0, 0.0, -0.0020245910165948918, 0.01827364366543033, 0.05671066311011875, 0.004816421458263337, -0.07777613721721752, -0.2691532844448555, 1.1612757490842465, -0.03435863321687339, -0.6910594569598312, -0.16670437446268646};
static const double ce_w_2_mean[1] = {2.249415094992761};
static const double ce_w_2_mean_g[20] = {0.008123501408949355, -0.016310849272265445, -0.07688654048484396, 0.08500048511031917, 7.340323784089122e-05, 0.0, 0.0, 0.0, 0.0, 0.0, -0.0036582545249834097, 0.03301883643612506, 0.10247108588199048, 0.008702841931776006, -0.1405345097249081, 0.09068643593726773, -0.39127131233803536, 0.01157653341121479, 0.23284025421309926, 0.05616808877645359};
static const double ce_w_2_sum[1] = {7.423069813476111};
static const double ce_w_2_sum_g[20] = {0.026807554649532866, -0.053825802598475955, -0.25372558359998504, 0.2805016008640532, 0.00024223068487493944, 0.0, 0.0, 0.0, 0.0, 0.0, -0.012072239932445255, 0.10896216023921267, 0.3381545834105685, 0.028719378374860802, -0.4637638820921967, 0.29926523859298354, -1.2911953307155166, 0.038202560257008814, 0.7683728389032276, 0.18535469296229687};
static const double ce_ign1[1] = {2.0603280327594145};
static const double PROB[20] = {0.16445380723108258, 0.24533625124846556, 0.11023668363387544, 0.3311692995654204, 0.14880395832115617, 0.38021929103850344, 0.05145708544471994, 0.17084354017971512, 0.18881131214770958, 0.2086687711893519, 0.1605183457029699, 0.1605183457029699, 0.3948114224887916, 0.08809433592835345, 0.19605755017691512, 0.19794328241140954, 0.19794328241140954, 0.07281926411715034, 0.13268535017846161, 0.3986088208815691};
static const double cep_n_0_none[4] = {2.0431393000059335, 1.6154841094237695, 1.6651406024250415, 1.9216204410756432};
static const double cep_n_0_none_gx[20] = {-0.042708433009297754, -0.18509543158928243, 0.06497989954439871, 0.2450487761928213, -0.08222481113863982, -0.030789822728327313, 0.1096060714314297, -0.10328792980150926, -0.04363953447309284, 0.06811121557149964, -0.01850073406298375, 0.011250452868690454, 0.012556070425928502, 0.002801638004972397, -0.008107427236607592, -0.01363783357543112, 0.0896770906735315, 0.028093052360743866, -0.30158536460500013, 0.19745305514615605};
static const double cep_n_0_none_gp[20] = {1.8295244544371212, 3.091730931648966, 1.4087889620331728, 0.399023780263697, 2.5027012422834383, 0.964111550748045, 1.6006197495260224, 2.6008469190342725, 1.7824792348911587, 1.1459710361131814, 0.4976050880440914, 0.20125307111837032, 0.10246906547646327, 0.31414907756626403, 0.2788690755512973, -1.1599098094223121, -1.9167123047302403, -2.522154300976583, -0.47878756364517666, -1.5004709323108798};
static const double cep_n_0_mean[1] = {1.811346113232597};
static const double cep_n_0_mean_gx[20] = {-0.010677108252324439, -0.04627385789732061, 0.01624497488609968, 0.06126219404820533, -0.020556202784659954, -0.007123285981274692, 0.02535757996981855, -0.023895865490419676, -0.010096092039384854, 0.015757663541260673, -0.027579063957117275, 0.0167710620646642, 0.018717347546743944, 0.004176404755658805, -0.012085750409949653, 0.003790897004341586, -0.02492746465280221, -0.007809001880548931, 0.08383142739723717, -0.05488585786822763};
static const double cep_n_0_mean_gp[20] = {0.4573811136092803, 0.7729327329122415, 0.3521972405082932, 0.09975594506592425, 0.6256753105708596, 0.22304910146527662, 0.37030652380665857, 0.6017110446288301, 0.4123800730470534, 0.2651226507056715, 0.7417804343241114, 0.3000081672999659, 0.15275074495858398, 0.46830236426154515, 0.41571042771105166, 0.32241914359234664, 0.5327868897943208, 0.7010810867559001, 0.13308817201056988, 0.417084629383235};
static const double cep_n_0_sum[1] = {7.245384452930388};
static const double cep_n_0_sum_gx[20] = {-0.042708433009297754, -0.18509543158928243, 0.06497989954439871, 0.2450487761928213, -0.08222481113863982, -0.028493143925098767, 0.1014303198792742, -0.0955834619616787, -0.040384368157539416, 0.0630306541650427, -0.1103162558284691, 0.0670842482586568, 0.07486939018697578, 0.01670561902263522, -0.04834300163979861, 0.015163588017366343, -0.09970985861120885, -0.031236007522195724, 0.3353257095889487, -0.21954343147291053};
static const double cep_n_0_sum_gp[20] = {1.8295244544371212, 3.091730931648966, 1.4087889620331728, 0.399023780263697, 2.5027012422834383, 0.8921964058611065, 1.4812260952266343, 2.4068441785153203, 1.6495202921882135, 1.060490602822686, 2.967121737296446, 1.2000326691998635, 0.6110029798343359, 1.8732094570461806, 1.6628417108442066, 1.2896765743693865, 2.131147559177283, 2.8043243470236003, 0.5323526880422795, 1.66833851753294};
static const double cep_w_0_none[4] = {2.8422796386076916, 1.5941981453962408, 1.7712866488247359, 2.1855115806185257};
static const double cep_w_0_none_gx[20] = {-0.011514493150469337, -0.3845784597400454, 0.16279049707626653, 0.27646808359902253, -0.04316562778477427, -0.02489812310294138, 0.06574200749291663, -0.02464024266609497, -0.1270869683068523, 0.11088332658297205, -0.018633800450788825, -0.012488540103137068, 0.038225736243241194, -0.0039025587464918366, -0.00320083694282344, -0.03785248228528402, 0.2305729892963847, -0.0034645025448443185, -0.31093548785439395, 0.12167948338813753};
static const double cep_w_0_none_gp[20] = {1.8295244544371212, 6.183461863297932, 0.7043944810165864, 0.5985356703955454, 2.002160993826751, 0.964111550748045, 3.2012394990520447, 1.3004234595171362, 2.6737188523367377, 0.9167768288905452, 0.4976050880440914, 0.40250614223674064, 0.051234532738231635, 0.4712236163493961, 0.22309526044103783, -1.1599098094223121, -3.8334246094604807, -1.2610771504882916, -0.7181813454677649, -1.200376745848704};
static const double cep_w_0_mean[1] = {2.0983190033617984};
static const double cep_w_0_mean_gx[20] = {-0.0028786232876173343, -0.09614461493501135, 0.04069762426906663, 0.06911702089975563, -0.010791406946193568, -0.005760229697459816, 0.015209542597473407, -0.005700568551735092, -0.02940181980684249, 0.025653075458563976, -0.027777426163034358, -0.018616680022689527, 0.05698314569958318, -0.005817548476697992, -0.004771491037161289, 0.010521822319395748, -0.06409217780604246, 0.0009630248269376558, 0.08643047320757813, -0.03382314254786904};
static const double cep_w_0_mean_gp[20] = {0.4573811136092803, 1.545865465824483, 0.1760986202541466, 0.14963391759888636, 0.5005402484566878, 0.22304910146527662, 0.7406130476133171, 0.30085552231441504, 0.61857010957058, 0.21209812056453722, 0.7417804343241114, 0.6000163345999318, 0.07637537247929199, 0.7024535463923176, 0.33256834216884135, 0.32241914359234664, 1.0655737795886415, 0.35054054337795004, 0.19963225801585482, 0.33366770350658803};
static const double cep_w_0_sum[1] = {8.393276013447194};
static const double cep_w_0_sum_gx[20] = {-0.011514493150469337, -0.3845784597400454, 0.16279049707626653, 0.27646808359902253, -0.04316562778477427, -0.023040918789839264, 0.06083817038989363, -0.02280227420694037, -0.11760727922736997, 0.1026123018342559, -0.11110970465213743, -0.07446672009075811, 0.22793258279833273, -0.02327019390679197, -0.019085964148645156, 0.04208728927758299, -0.2563687112241698, 0.003852099307750623, 0.3457218928303125, -0.13529257019147617};
static const double cep_w_0_sum_gp[20] = {1.8295244544371212, 6.183461863297932, 0.7043944810165864, 0.5985356703955454, 2.002160993826751, 0.8921964058611065, 2.9624521904532686, 1.2034220892576601, 2.47428043828232, 0.8483924822581489, 2.967121737296446, 2.400065338399727, 0.30550148991716797, 2.8098141855692704, 1.3302733686753654, 1.2896765743693865, 4.262295118354566, 1.4021621735118002, 0.7985290320634193, 1.3346708140263521};
static const double cep_n_3_none[4] = {2.088456882270492, 1.6649234292320896, 1.758432306952821, 1.9459279074581317};
static const double cep_n_3_none_gx[20] = {-0.05168175995992746, -0.17365068959361907, 0.04231993167773101, 0.27816132409738414, -0.09514880622156868, 0.018372058553370648, 0.06908516443793873, -0.11124149796848871, -0.04669168799518585, 0.07047596297236512, -0.02017222947476788, 0.009578957456906324, 0.02080360727946025, -0.0019360004597482683, -0.008274334801850396, -0.013170874874474473, 0.09014404937448815, 0.05696826184211561, -0.2863021961182843, 0.152360759776155};
static const double cep_n_3_none_gp[20] = {1.2806671181059848, 2.1642116521542762, 0.9861522734232209, 0.2793166461845879, 1.7518908695984066, 0.6748780855236315, 1.1204338246682155, 1.8205928433239906, 1.247735464423811, 0.802179725279227, 0.348323561630864, 0.1408771497828592, 0.07172834583352429, 0.2199043542963848, 0.1952083528859081, -0.8119368665956185, -1.3416986133111681, -1.765508010683608, -0.3351512945516236, -1.0503296526176158};
static const double cep_n_3_mean[1] = {1.8644351314783838};
static const double cep_n_3_mean_gx[20] = {-0.012920439989981864, -0.04341267239840477, 0.010579982919432752, 0.06954033102434604, -0.02378720155539217, 0.004250411842091588, 0.015982988525038544, -0.025735939112306202, -0.010802213753317965, 0.016304752498494043, -0.030070763946354783, 0.01427936207542669, 0.031011959511754235, -0.0028859979457374536, -0.012334559695088676, 0.0036610968912358616, -0.02505726476590793, -0.015835419310944013, 0.07958317804643751, -0.04235159086082145};
static const double cep_n_3_mean_gp[20] = {0.3201667795264962, 0.5410529130385691, 0.24653806835580522, 0.06982916154614698, 0.43797271739960164, 0.15613437102569364, 0.259214566664661, 0.421197731240181, 0.28866605113293736, 0.18558585549397003, 0.519246304026878, 0.2100057171099761, 0.10692552147100878, 0.32781165498308157, 0.29099729939773616, 0.22569340051464262, 0.3729508228560245, 0.49075676072913005, 0.09316172040739891, 0.29195924056826444};
static const double cep_n_3_sum[1] = {7.457740525913535};
static const double cep_n_3_sum_gx[20] = {-0.05168175995992746, -0.17365068959361907, 0.04231993167773101, 0.27816132409738414, -0.09514880622156868, 0.017001647368366353, 0.06393195410015418, -0.10294375644922481, -0.04320885501327186, 0.06521900999397617, -0.12028305578541913, 0.05711744830170676, 0.12404783804701694, -0.011543991782949814, -0.049338238780354704, 0.014644387564943446, -0.10022905906363172, -0.06334167724377605, 0.31833271218575004, -0.1694063634432858};
static const double cep_n_3_sum_gp[20] = {1.2806671181059848, 2.1642116521542762, 0.9861522734232209, 0.2793166461845879, 1.7518908695984066, 0.6245374841027745, 1.036858266658644, 1.684790924960724, 1.1546642045317494, 0.7423434219758801, 2.076985216107512, 0.8400228684399044, 0.42770208588403513, 1.3112466199323263, 1.1639891975909447, 0.9027736020585705, 1.491803291424098, 1.9630270429165202, 0.37264688162959564, 1.1678369622730578};
static const double cep_w_3_none[4] = {2.796616618854336, 1.7135167828344917, 1.9395879610734532, 2.1778186809309785};
static const double cep_w_3_none_gx[20] = {-0.025253617701138792, -0.36275236893045054, 0.1436030412678955, 0.30004918011362947, -0.05564623474993556, 0.0376134931027793, -0.008670524321284716, -0.02641033040859086, -0.1262376014043047, 0.12370496303140098, -0.020066098369765393, -0.01387820355777857, 0.04628302294775951, -0.010131329880311155, -0.0022073911399043762, -0.037966335545795205, 0.23129323791848758, 0.01087709462434512, -0.2894393020317436, 0.08523530503470611};
static const double cep_w_3_none_gp[20] = {1.2806671181059848, 4.3284233043085525, 0.49307613671161044, 0.41897496927688177, 1.4015126956787256, 0.6748780855236315, 2.240867649336431, 0.9102964216619953, 1.8716031966357163, 0.6417437802233816, 0.348323561630864, 0.2817542995657184, 0.035864172916762145, 0.3298565314445772, 0.15616668230872646, -0.8119368665956185, -2.6833972266223363, -0.882754005341804, -0.5027269418274354, -0.8402637220940927};
static const double cep_w_3_mean[1] = {2.1568850109233146};
static const double cep_w_3_mean_gx[20] = {-0.006313404425284698, -0.09068809223261264, 0.035900760316973875, 0.07501229502840737, -0.01391155868748389, 0.008701955528938375, -0.0020059428367960592, -0.0061100818286708046, -0.029205317105178354, 0.02861938624170685, -0.02991255419517742, -0.02068825281347453, 0.06899415156498521, -0.015102784234859258, -0.0032905603214740103, 0.010553470013424205, -0.06429238470318702, -0.0030234967452347937, 0.08045519671009534, -0.02369278527509773};
static const double cep_w_3_mean_gp[20] = {0.3201667795264962, 1.0821058260771381, 0.12326903417790261, 0.10474374231922044, 0.3503781739196814, 0.15613437102569364, 0.518429133329322, 0.2105988656200905, 0.43299907669940596, 0.14846868439517605, 0.519246304026878, 0.4200114342199522, 0.05346276073550439, 0.49171748247462227, 0.23279783951818891, 0.22569340051464262, 0.745901645712049, 0.24537838036456502, 0.13974258061109837, 0.2335673924546116};
static const double cep_w_3_sum[1] = {8.627540043693259};
static const double cep_w_3_sum_gx[20] = {-0.025253617701138792, -0.36275236893045054, 0.1436030412678955, 0.30004918011362947, -0.05564623474993556, 0.0348078221157535, -0.008023771347184237, -0.024440327314683218, -0.11682126842071341, 0.1144775449668274, -0.11965021678070968, -0.08275301125389813, 0.27597660625994086, -0.06041113693943703, -0.013162241285896041, 0.04221388005369682, -0.25716953881274807, -0.012093986980939175, 0.32182078684038135, -0.09477114110039092};
static const double cep_w_3_sum_gp[20] = {1.2806671181059848, 4.3284233043085525, 0.49307613671161044, 0.41897496927688177, 1.4015126956787256, 0.6245374841027745, 2.073716533317288, 0.842395462480362, 1.7319963067976238, 0.5938747375807042, 2.076985216107512, 1.6800457368798087, 0.21385104294201757, 1.966869929898489, 0.9311913580727557, 0.9027736020585705, 2.983606582848196, 0.9815135214582601, 0.5589703224443935, 0.9342695698184464};
static const double cek_none[8] = {0.7274919240821259, 3.083196135096438, 3.951082129542339, 0.0, 1.242425348179934, 0.7632016816722044, 0.9901163853582452, 0.34901988465552564};
static const double cek_none_g[24] = {-0.2453850086946053, 1.2106069920223475, 0.09064129419000018, 0.0, 0.2598061377126767, 0.13724583030163823, -0.12944496442604442, 0.0, -0.014421129018071306, -1.3478528223239856, 0.038803670236044224, 0.0, -0.7700837156133075, -0.1285461932448857, -0.25372606651694374, 0.022390395487676126, 0.011888902532731036, -0.011124319808366149, 0.09578367780430151, -0.061618203676716374, 0.7581948130805765, 0.13967051305325187, 0.15794238871264227, 0.03922780818904013};
static const double cek_mean[1] = {1.234059276509646};
static const double cek_mean_g[24] = {-0.027265000966067262, 0.124478358264966, 0.060052921650726364, 0.0, 0.028867348634741854, 0.014112041106024506, -0.08576166499193597, 0.0, -0.0016023476686745895, -0.1385903993709905, 0.025708743341209588, 0.0, 0.07508449481515707, 0.043013557674787234, -0.03610814783061632, 0.00211594718153643, -0.0011591885693438045, 0.0037223706092826894, 0.013631122909032602, -0.005823071078527776, -0.07392530624581325, -0.04673592828406991, 0.022477024921583717, 0.0037071238969913363};
static const double cek_sum[1] = {11.106533488586814};
static const double cek_sum_g[24] = {-0.2453850086946053, 1.1203052243846936, 0.5404762948565373, 0.0, 0.2598061377126767, 0.12700836995422052, -0.7718549849274235, 0.0, -0.014421129018071306, -1.2473135943389142, 0.23137869007088624, 0.0, 0.6757604533364134, 0.387122019073085, -0.3249733304755468, 0.019043524633827864, -0.010432697124094243, 0.03350133548354419, 0.12268010618129341, -0.05240763970674997, -0.6653277562123193, -0.42062335455662925, 0.20229322429425342, 0.033364115072922015};
static const double ce1[1] = {0.7380342690786598};
static const double ce1n[1] = {1.1070514036179897};
static const double nll_n_none[4] = {1.674197907554462, 0.0, 1.976112950850973, 2.532645329017272};
static const double nll_n_none_g[20] = {0.0, 0.0, -0.8414709848078965, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.1411200080598672, 0.0, 0.7568024953079282, 0.0, 0.0, 0.0};
static const double nll_n_mean[1] = {2.060985395807569};
static const double nll_n_mean_g[20] = {0.0, 0.0, -0.2804903282692988, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.2804903282692988, 0.0, -0.2804903282692988, 0.0, 0.0, 0.0};
static const double nll_n_sum[1] = {6.1829561874227075};
static const double nll_n_sum_g[20] = {0.0, 0.0, -0.8414709848078965, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.8414709848078965, 0.0, -0.8414709848078965, 0.0, 0.0, 0.0};
static const double nll_w_none[4] = {0.837098953777231, 0.0, 1.5808903606807785, 5.065290658034544};
static const double nll_w_none_g[20] = {0.0, 0.0, -0.42073549240394825, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.11289600644789377, 0.0, 1.5136049906158564, 0.0, 0.0, 0.0};
static const double nll_w_mean[1] = {2.2676605977250164};
static const double nll_w_mean_g[20] = {0.0, 0.0, -0.1274956037587722, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.20399296601403552, 0.0, -0.5099824150350888, 0.0, 0.0, 0.0};
static const double nll_w_sum[1] = {7.483279972492554};
static const double nll_w_sum_g[20] = {0.0, 0.0, -0.42073549240394825, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.6731767878463173, 0.0, -1.682941969615793, 0.0, 0.0, 0.0};
static const double nllk_none[8] = {-0.0, -0.06725560193739885, 1.7431515448271755, 0.0, -3.9624294227794814, -3.382987324571737, 0.36647912925192677, -1.339139524393202};
static const double nllk_mean[1] = {-0.7380201332891908};
static const double nllk_sum[1] = {-6.642181199602717};

static const double X20[20] = {0.3, -1.2, 0.8, 2.0, -0.5, 1.1, 0.4, -0.7, 0.2, 0.9, -1.5, 0.6, 1.3, -0.2, 0.05, 0.7, -0.3, -1.1, 1.6, 0.25};
static const double T4[4] = {2, -100, 4, 1}, W5[5] = {1, 2, 0.5, 1.5, 0.8}, WK3[3] = {0.5, 1.0, 2.0};
static const double TK8[8] = {0, 2, 1, -100, 2, 2, 0, 1}; /* [2, 2, 2] for input [2, 3, 2, 2] */
static const tensor_reduction PY_REDS[3] = {TENSOR_REDUCTION_NONE, TENSOR_REDUCTION_MEAN, TENSOR_REDUCTION_SUM}; /* the order of the numbers */

static tensor *f64t(int nd, const int64_t *shape, const double *v) { return test_tensor(TENSOR_F64, nd, shape, v); }
static tensor *leaf64(int nd, const int64_t *shape, const double *v) { return tensor_set_requires_grad(f64t(nd, shape, v), true); }
static tensor *xk_input(void) { /* 2 sin(0.7 i), [2, 3, 2, 2] */
    return tensor_reshape(tensor_mul_scalar(tensor_sin(tensor_mul_scalar(tensor_arange(0, 24, 1, TENSOR_F64), 0.7)), 2), TENSOR_SHAPE(2, 3, 2, 2));
}
/* The output gradient of the numbers: sin(1 .. n) in l's shape. */
static tensor *upstream(tensor *l) {
    int64_t n = tensor_numel(l);
    return tensor_reshape(tensor_sin(tensor_arange(1, (double)n + 1, 1, tensor_get_dtype(l))), tensor_ndim(l), tensor_shape(l));
}

/* A class loss of the numbers' inputs: x (a leaf), target, weight and the options. */
typedef struct { int kind; tensor *target, *weight; int64_t ignore; tensor_reduction r; double eps; } cl_ctx; /* kind 0 cross_entropy_ex, 1 nll_loss_ex */
static tensor *cl_call(tensor *const *in, const void *vctx) {
    const cl_ctx *c = (const cl_ctx *)vctx;
    tensor *t = c->target ? test_like(in[0], c->target) : in[1], *w = test_like(in[0], c->weight);
    if (c->kind == 1) return tensor_nll_loss_ex(in[0], t, w, c->ignore, c->r);
    return tensor_cross_entropy_ex(in[0], t, w, c->ignore, c->r, c->eps);
}

/* l = f(in) against value v; the gradients of in[0] (and in[1] when it is a leaf) for the output
   gradient sin(1 .. n) against g0 (g1): by the fused backward, and composed (create_graph). */
static void check_loss(int line, const cl_ctx *c, tensor *const *in, const double *v, const double *g0, const double *g1) {
    tensor *l = cl_call(in, c);
    if (!l) { test_fail(__FILE__, line, "NULL: %s", tensor_last_error() ? tensor_last_error() : "no error"); return; }
    test_check_values(__FILE__, line, l, v, tensor_numel(l), 1e-13, 1e-12);
    int nl = in[1] && tensor_requires_grad(in[1]) ? 2 : 1;
    const double *want[2] = {g0, g1};
    for (int i = 0; i < nl; i++) tensor_zero_grad(in[i]);
    tensor *up = upstream(l);
    if (tensor_backward_with(l, up) != 0) { test_fail(__FILE__, line, "backward: %s", tensor_last_error()); return; }
    for (int i = 0; i < nl; i++) test_check_values(__FILE__, line, tensor_grad(in[i]), want[i], tensor_numel(in[i]), 1e-13, 1e-12);
    tensor *l2 = cl_call(in, c), *gs[2] = {NULL, NULL};
    if (tensor_autograd_grad(1, &l2, &up, nl, in, gs, true) != 0) { test_fail(__FILE__, line, "autograd_grad: %s", tensor_last_error()); return; }
    for (int i = 0; i < nl; i++) test_check_values(__FILE__, line, gs[i], want[i], tensor_numel(in[i]), 1e-13, 1e-12);
    for (int i = 0; i < nl; i++) tensor_zero_grad(in[i]);
}

typedef struct { const double *v, *g; } vg;
TEST(loss_more_cross_entropy_class_indices) {
    static const vg ce[2][2][3] = {
        {{{ce_n_0_none, ce_n_0_none_g}, {ce_n_0_mean, ce_n_0_mean_g}, {ce_n_0_sum, ce_n_0_sum_g}},
         {{ce_w_0_none, ce_w_0_none_g}, {ce_w_0_mean, ce_w_0_mean_g}, {ce_w_0_sum, ce_w_0_sum_g}}},
        {{{ce_n_2_none, ce_n_2_none_g}, {ce_n_2_mean, ce_n_2_mean_g}, {ce_n_2_sum, ce_n_2_sum_g}},
         {{ce_w_2_none, ce_w_2_none_g}, {ce_w_2_mean, ce_w_2_mean_g}, {ce_w_2_sum, ce_w_2_sum_g}}}};
    tensor *in[2] = {leaf64(TENSOR_SHAPE(4, 5), X20), NULL};
    tensor *t = test_tensor(TENSOR_I64, TENSOR_SHAPE(4), T4), *w = f64t(TENSOR_SHAPE(5), W5);
    for (int e = 0; e < 2; e++)
        for (int k = 0; k < 2; k++)
            for (int r = 0; r < 3; r++) {
                cl_ctx c = {0, t, k ? w : NULL, -100, PY_REDS[r], e ? 0.2 : 0};
                const vg *x = &ce[e][k][r];
                check_loss(__LINE__, &c, in, x->v, x->g, NULL);
                c.target = tensor_to_dtype(t, TENSOR_I32); /* i32 targets */
                check_loss(__LINE__, &c, in, x->v, x->g, NULL);
            }
    /* none keeps the rows' shape */
    tensor *ln = tensor_cross_entropy_ex(in[0], t, NULL, -100, TENSOR_REDUCTION_NONE, 0);
    CHECK_SHAPE(ln, TENSOR_SHAPE(4));
    /* ignore_index a valid class: its targets count for nothing */
    static const double t1[4] = {2, 1, 4, 1};
    CHECK_VALUES(tensor_cross_entropy_ex(in[0], test_tensor(TENSOR_I64, TENSOR_SHAPE(4), t1), w, 1, TENSOR_REDUCTION_MEAN, 0.1), ce_ign1, 1, 1e-13, 1e-12);
    /* [C] with a 0-dim target */
    tensor *x1 = f64t(TENSOR_SHAPE(5), X20), *t0 = tensor_scalar(3, TENSOR_I64);
    CHECK_VALUES(tensor_cross_entropy_ex(x1, t0, w, -100, TENSOR_REDUCTION_MEAN, 0.2), ce1, 1, 1e-13, 1e-12);
    tensor *l1 = tensor_cross_entropy_ex(x1, t0, w, -100, TENSOR_REDUCTION_NONE, 0.2);
    CHECK_SHAPE(l1, 0, NULL);
    CHECK_VALUES(l1, ce1n, 1, 1e-13, 1e-12);
    /* every target ignored: mean NaN (with or without weights and smoothing), sum 0, gradient 0 */
    tensor *ti = tensor_full(TENSOR_SHAPE(4), -100, TENSOR_I64);
    CHECK(isnan(tensor_item(tensor_cross_entropy_ex(in[0], ti, NULL, -100, TENSOR_REDUCTION_MEAN, 0))));
    CHECK(isnan(tensor_item(tensor_cross_entropy_ex(in[0], ti, w, -100, TENSOR_REDUCTION_MEAN, 0.2))));
    CHECK(tensor_item(tensor_cross_entropy_ex(in[0], ti, NULL, -100, TENSOR_REDUCTION_SUM, 0)) == 0);
    CHECK(tensor_backward(tensor_cross_entropy_ex(in[0], ti, w, -100, TENSOR_REDUCTION_MEAN, 0.2)) == 0);
    CHECK(tensor_item(tensor_sum_all(tensor_abs(tensor_grad(in[0])))) == 0);
    tensor_zero_grad(in[0]);
    /* the defaults are tensor_cross_entropy */
    CHECK_NEAR(tensor_item(tensor_cross_entropy(in[0], t)), ce_n_0_mean[0], 1e-13, 1e-12);
}

TEST(loss_more_cross_entropy_probabilities) {
    static const vg cx[2][2][3] = {
        {{{cep_n_0_none, cep_n_0_none_gx}, {cep_n_0_mean, cep_n_0_mean_gx}, {cep_n_0_sum, cep_n_0_sum_gx}},
         {{cep_w_0_none, cep_w_0_none_gx}, {cep_w_0_mean, cep_w_0_mean_gx}, {cep_w_0_sum, cep_w_0_sum_gx}}},
        {{{cep_n_3_none, cep_n_3_none_gx}, {cep_n_3_mean, cep_n_3_mean_gx}, {cep_n_3_sum, cep_n_3_sum_gx}},
         {{cep_w_3_none, cep_w_3_none_gx}, {cep_w_3_mean, cep_w_3_mean_gx}, {cep_w_3_sum, cep_w_3_sum_gx}}}};
    static const double *const cp[2][2][3] = {
        {{cep_n_0_none_gp, cep_n_0_mean_gp, cep_n_0_sum_gp}, {cep_w_0_none_gp, cep_w_0_mean_gp, cep_w_0_sum_gp}},
        {{cep_n_3_none_gp, cep_n_3_mean_gp, cep_n_3_sum_gp}, {cep_w_3_none_gp, cep_w_3_mean_gp, cep_w_3_sum_gp}}};
    tensor *in[2] = {leaf64(TENSOR_SHAPE(4, 5), X20), leaf64(TENSOR_SHAPE(4, 5), PROB)};
    tensor *w = f64t(TENSOR_SHAPE(5), W5);
    for (int e = 0; e < 2; e++)
        for (int k = 0; k < 2; k++)
            for (int r = 0; r < 3; r++) {
                cl_ctx c = {0, NULL, k ? w : NULL, -100, PY_REDS[r], e ? 0.3 : 0};
                check_loss(__LINE__, &c, in, cx[e][k][r].v, cx[e][k][r].g, cp[e][k][r]);
            }
}

TEST(loss_more_cross_entropy_kdim) {
    static const vg ck[3] = {{cek_none, cek_none_g}, {cek_mean, cek_mean_g}, {cek_sum, cek_sum_g}};
    tensor *in[2] = {tensor_set_requires_grad(xk_input(), true), NULL};
    tensor *t = test_tensor(TENSOR_I64, TENSOR_SHAPE(2, 2, 2), TK8), *w = f64t(TENSOR_SHAPE(3), WK3);
    for (int r = 0; r < 3; r++) {
        cl_ctx c = {0, t, w, -100, PY_REDS[r], 0.1};
        check_loss(__LINE__, &c, in, ck[r].v, ck[r].g, NULL);
    }
    CHECK_SHAPE(tensor_cross_entropy_ex(in[0], t, w, -100, TENSOR_REDUCTION_NONE, 0.1), TENSOR_SHAPE(2, 2, 2));
    /* a non-contiguous input: the same numbers */
    tensor *xt = tensor_transpose(tensor_contiguous(tensor_transpose(xk_input(), 1, 3)), 1, 3);
    CHECK_VALUES(tensor_cross_entropy_ex(xt, t, w, -100, TENSOR_REDUCTION_NONE, 0.1), cek_none, 8, 1e-13, 1e-12);
}

/* The f32 vector rows (forward and fused backward) against the reference kernels and PyTorch. */
TEST(loss_more_cross_entropy_f32_fast_vs_reference) {
    tensor *t = test_tensor(TENSOR_I64, TENSOR_SHAPE(4), T4), *w = test_tensor(TENSOR_F32, TENSOR_SHAPE(5), W5);
    for (int k = 0; k < 4; k++) {
        tensor *x = tensor_set_requires_grad(test_tensor(TENSOR_F32, TENSOR_SHAPE(4, 5), X20), true);
        tensor *ww = k & 1 ? w : NULL;
        double eps = k & 2 ? 0.2 : 0;
        const vg *want = k == 0 ? &(vg){ce_n_0_sum, ce_n_0_sum_g} : k == 1 ? &(vg){ce_w_0_sum, ce_w_0_sum_g} : k == 2 ? &(vg){ce_n_2_sum, ce_n_2_sum_g} : &(vg){ce_w_2_sum, ce_w_2_sum_g};
        double *got[2];
        for (int ref = 0; ref < 2; ref++) {
            bool was = tensor_set_reference_kernels(ref == 1);
            tensor *l = tensor_cross_entropy_ex(x, t, ww, -100, TENSOR_REDUCTION_SUM, eps);
            CHECK(l && tensor_get_dtype(l) == TENSOR_F32);
            CHECK_VALUES(l, want->v, 1, 1e-5, 1e-5);
            CHECK(tensor_backward_with(l, tensor_full(0, NULL, sin(1.0), TENSOR_F32)) == 0);
            tensor_set_reference_kernels(was);
            CHECK_VALUES(tensor_grad(x), want->g, 20, 1e-6, 1e-5);
            got[ref] = test_values(tensor_grad(x));
            tensor_zero_grad(x);
        }
        for (int i = 0; i < 20; i++) CHECK_NEAR(got[0][i], got[1][i], 1e-7, 1e-6);
        free(got[0]);
        free(got[1]);
    }
}

TEST(loss_more_nll_loss_ex) {
    static const vg nl[2][3] = {{{nll_n_none, nll_n_none_g}, {nll_n_mean, nll_n_mean_g}, {nll_n_sum, nll_n_sum_g}},
                                {{nll_w_none, nll_w_none_g}, {nll_w_mean, nll_w_mean_g}, {nll_w_sum, nll_w_sum_g}}};
    tensor *lp = tensor_log_softmax(f64t(TENSOR_SHAPE(4, 5), X20), 1);
    tensor *in[2] = {tensor_set_requires_grad(tensor_detach(lp), true), NULL};
    tensor *t = test_tensor(TENSOR_I64, TENSOR_SHAPE(4), T4), *w = f64t(TENSOR_SHAPE(5), W5);
    for (int k = 0; k < 2; k++)
        for (int r = 0; r < 3; r++) {
            cl_ctx c = {1, t, k ? w : NULL, -100, PY_REDS[r], 0};
            check_loss(__LINE__, &c, in, nl[k][r].v, nl[k][r].g, NULL);
        }
    /* K-dim input (any values: nll only picks them) */
    tensor *xk = xk_input(), *tk = test_tensor(TENSOR_I64, TENSOR_SHAPE(2, 2, 2), TK8), *wk = f64t(TENSOR_SHAPE(3), WK3);
    tensor *lk = tensor_nll_loss_ex(xk, tk, wk, -100, TENSOR_REDUCTION_NONE);
    CHECK_SHAPE(lk, TENSOR_SHAPE(2, 2, 2));
    CHECK_VALUES(lk, nllk_none, 8, 1e-13, 1e-12);
    CHECK_VALUES(tensor_nll_loss_ex(xk, tk, wk, -100, TENSOR_REDUCTION_MEAN), nllk_mean, 1, 1e-13, 1e-12);
    CHECK_VALUES(tensor_nll_loss_ex(xk, tk, wk, -100, TENSOR_REDUCTION_SUM), nllk_sum, 1, 1e-13, 1e-12);
    /* every target ignored: NaN; ignore_index 3 with weights */
    CHECK(isnan(tensor_item(tensor_nll_loss_ex(lp, tensor_full(TENSOR_SHAPE(4), -100, TENSOR_I64), w, -100, TENSOR_REDUCTION_MEAN))));
    static const double t3[4] = {3, 3, 0, 3};
    CHECK_NEAR(tensor_item(tensor_nll_loss_ex(lp, test_tensor(TENSOR_I32, TENSOR_SHAPE(4), t3), w, 3, TENSOR_REDUCTION_MEAN)), 3.5261129508509725, 1e-13, 1e-12);
    /* the defaults are tensor_nll_loss */
    CHECK_NEAR(tensor_item(tensor_nll_loss(lp, t)), nll_n_mean[0], 1e-13, 1e-12);
    /* the weight gets no gradient (PyTorch's neither): a clear error */
    tensor *wg = tensor_set_requires_grad(tensor_clone(w), true);
    tensor_clear_error();
    CHECK(tensor_backward(tensor_nll_loss_ex(in[0], t, wg, -100, TENSOR_REDUCTION_MEAN)) != 0);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "weight"));
    tensor_clear_error();
    tensor_zero_grad(in[0]);
}

/* ---- the registry sweep's gradient checks and bad-input cases ---- */

void gradcheck_cross_entropy_ex(void) {
    tensor *t = test_tensor(TENSOR_I64, TENSOR_SHAPE(4), T4), *w = f64t(TENSOR_SHAPE(5), W5);
    tensor *in[2] = {test_leaf(TENSOR_SHAPE(4, 5), -2, 2), NULL};
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 4; k += 3) { /* neither, or weights and smoothing (the value tests cover the rest) */
            cl_ctx c = {0, t, k & 1 ? w : NULL, -100, PY_REDS[r], k & 2 ? 0.25 : 0};
            CHECK(GRADCHECK(cl_call, &c, 1, in) == 20);
            if (r == 1 && k) CHECK(GRADGRADCHECK(cl_call, &c, 1, in) == 20);
        }
    /* K-dim, weights, smoothing */
    tensor *ink[2] = {test_leaf(TENSOR_SHAPE(2, 3, 2, 2), -2, 2), NULL};
    cl_ctx ck = {0, test_tensor(TENSOR_I64, TENSOR_SHAPE(2, 2, 2), TK8), f64t(TENSOR_SHAPE(3), WK3), -100, TENSOR_REDUCTION_MEAN, 0.1};
    CHECK(GRADCHECK(cl_call, &ck, 1, ink) == 24);
    ck.r = TENSOR_REDUCTION_NONE;
    CHECK(GRADCHECK(cl_call, &ck, 1, ink) == 24);
    /* probabilities: both arguments */
    tensor *inp[2] = {test_leaf(TENSOR_SHAPE(3, 4), -2, 2), tensor_set_requires_grad(tensor_detach(tensor_softmax(test_leaf(TENSOR_SHAPE(3, 4), -1, 1), 1)), true)};
    tensor *w4 = f64t(TENSOR_SHAPE(4), W5);
    for (int r = 0; r < 3; r++) {
        cl_ctx c = {0, NULL, w4, -100, PY_REDS[r], 0.3};
        CHECK(GRADCHECK(cl_call, &c, 2, inp) == 24);
        if (r == 0) CHECK(GRADGRADCHECK(cl_call, &c, 2, inp) == 24);
    }
}
void gradcheck_nll_loss_ex(void) {
    tensor *t = test_tensor(TENSOR_I64, TENSOR_SHAPE(4), T4), *w = f64t(TENSOR_SHAPE(5), W5);
    tensor *in[2] = {test_leaf(TENSOR_SHAPE(4, 5), -3, -0.1), NULL};
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 2; k++) {
            cl_ctx c = {1, t, k ? w : NULL, -100, PY_REDS[r], 0};
            CHECK(GRADCHECK(cl_call, &c, 1, in) == 20);
        }
    tensor *ink[2] = {test_leaf(TENSOR_SHAPE(2, 3, 2, 2), -2, 2), NULL};
    static const double tk2[8] = {0, 2, 1, 1, 2, 2, 0, 1};
    cl_ctx ck = {1, test_tensor(TENSOR_I64, TENSOR_SHAPE(2, 2, 2), tk2), f64t(TENSOR_SHAPE(3), WK3), 2, TENSOR_REDUCTION_MEAN, 0}; /* ignore_index 2 */
    CHECK(GRADCHECK(cl_call, &ck, 1, ink) == 24);
}

#define BAD_RED ((tensor_reduction)9)
void bad_input_cross_entropy_ex(void) {
    const char *fn = "tensor_cross_entropy_ex";
    tensor *x = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32), *t = tensor_zeros(TENSOR_SHAPE(2), TENSOR_I64), *w = tensor_ones(TENSOR_SHAPE(3), TENSOR_F32);
    CHECK_BAD(tensor_cross_entropy_ex(NULL, t, NULL, -100, TENSOR_REDUCTION_MEAN, 0), fn);
    CHECK_BAD(tensor_cross_entropy_ex(x, NULL, NULL, -100, TENSOR_REDUCTION_MEAN, 0), fn);
    CHECK_BAD(tensor_cross_entropy_ex(x, t, NULL, -100, BAD_RED, 0), fn);
    CHECK_BAD(tensor_cross_entropy_ex(x, t, NULL, -100, TENSOR_REDUCTION_MEAN, 1.5), fn); /* label_smoothing in [0, 1] */
    CHECK_BAD(tensor_cross_entropy_ex(x, t, NULL, -100, TENSOR_REDUCTION_MEAN, -0.1), fn);
    CHECK_BAD(tensor_cross_entropy_ex(x, t, NULL, -100, TENSOR_REDUCTION_MEAN, NAN), fn);
    CHECK_BAD(tensor_cross_entropy_ex(x, t, tensor_ones(TENSOR_SHAPE(2), TENSOR_F32), -100, TENSOR_REDUCTION_MEAN, 0), fn); /* weight of 2 for 3 classes */
    CHECK_BAD(tensor_cross_entropy_ex(x, t, tensor_ones(TENSOR_SHAPE(3), TENSOR_I64), -100, TENSOR_REDUCTION_MEAN, 0), fn);
    CHECK_BAD(tensor_cross_entropy_ex(x, tensor_zeros(TENSOR_SHAPE(3), TENSOR_I64), w, -100, TENSOR_REDUCTION_MEAN, 0), fn); /* targets of 3 rows */
    CHECK_BAD(tensor_cross_entropy_ex(x, tensor_full(TENSOR_SHAPE(2), 3, TENSOR_I64), w, -100, TENSOR_REDUCTION_NONE, 0), fn); /* class 3 of 3 */
    CHECK_BAD(tensor_cross_entropy_ex(x, tensor_full(TENSOR_SHAPE(2), -100, TENSOR_I64), w, 1, TENSOR_REDUCTION_SUM, 0), fn); /* -100 is a class when not ignored */
    CHECK_BAD(tensor_cross_entropy_ex(x, tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32), w, 1, TENSOR_REDUCTION_MEAN, 0), fn); /* ignore_index with probabilities */
    CHECK_BAD(tensor_cross_entropy_ex(x, tensor_zeros(TENSOR_SHAPE(3, 2), TENSOR_F32), NULL, -100, TENSOR_REDUCTION_MEAN, 0), fn);
    CHECK_BAD(tensor_cross_entropy_ex(tensor_scalar(1, TENSOR_F32), tensor_scalar(0, TENSOR_I64), NULL, -100, TENSOR_REDUCTION_MEAN, 0), fn);
    CHECK_BAD(tensor_cross_entropy_ex(tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_I64), t, NULL, -100, TENSOR_REDUCTION_MEAN, 0), fn);
}
void bad_input_nll_loss_ex(void) {
    const char *fn = "tensor_nll_loss_ex";
    tensor *x = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32), *t = tensor_zeros(TENSOR_SHAPE(2), TENSOR_I64);
    CHECK_BAD(tensor_nll_loss_ex(NULL, t, NULL, -100, TENSOR_REDUCTION_MEAN), fn);
    CHECK_BAD(tensor_nll_loss_ex(x, t, NULL, -100, BAD_RED), fn);
    CHECK_BAD(tensor_nll_loss_ex(x, tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), NULL, -100, TENSOR_REDUCTION_MEAN), fn); /* index targets only */
    CHECK_BAD(tensor_nll_loss_ex(x, t, tensor_ones(TENSOR_SHAPE(4), TENSOR_F32), -100, TENSOR_REDUCTION_MEAN), fn);
    CHECK_BAD(tensor_nll_loss_ex(x, tensor_full(TENSOR_SHAPE(2), -1, TENSOR_I64), NULL, -100, TENSOR_REDUCTION_NONE), fn);
    CHECK_BAD(tensor_nll_loss_ex(x, tensor_zeros(TENSOR_SHAPE(2, 1), TENSOR_I64), NULL, -100, TENSOR_REDUCTION_MEAN), fn);
}

/* ---- ctc_loss: PyTorch's numbers ---- */
static const double ctcA_none[3] = {12.023546395747651, 3.3339674642958053, 0.0};
static const double ctcA_none_g[90] = {0.010066321340220128, -0.7103012373705946, 0.1694880098193923, 0.24832241168560773, 0.2824244945253739, -0.2637207353601081, 0.2644432162915469, -0.10730249191369003, 0.07196414151939724, 0.03461586946285464, 0.0, 0.0, 0.0, 0.0, 0.0, -0.7024313336636224, -0.055916671534070615, 0.11423795332764873, 0.23112603506492332, 0.41298401680512126, -0.0964537139102548, 0.2493194748465203, -0.3574686225384883, 0.14462414448607858, 0.059978717116144345, 0.0, 0.0, 0.0, 0.0, 0.0, -0.10138589394296005, -0.6295378856587114, 0.10446357210718915, 0.20318399966344872, 0.42327620783103415, -0.044925918819253716, 0.15016903961387087, -0.29142919988511007, 0.24564777332084228, -0.05946169423034898, 0.0, 0.0, 0.0, 0.0, 0.0, 0.09127424661362028, -0.07776097304007694, -0.45307019875633703, 0.1648965409940447, 0.2746603841887493, -0.005097017213726616, 0.07416734097355694, 0.0009591601760563288, 0.26567723959318446, -0.3357067235290705, 0.0, 0.0, 0.0, 0.0, 0.0, 0.1973744230801544, 0.18633549051107945, -0.2002409526944915, -0.27629319061920116, 0.09282422972245856, -0.01631305157421441, 0.057462553693737775, 0.11223883000145247, 0.23396906665328812, -0.38735739877426417, 0.0, 0.0, 0.0, 0.0, 0.0, 0.11042632116310656, 0.21377893902066722, 0.1030720946602896, -0.4609225755414984, 0.033645220697435405, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
static const double ctcA_mean[1] = {1.5576234436949383};
static const double ctcA_mean_g[90] = {0.0008388601116850106, -0.05919176978088288, 0.014124000818282691, 0.020693534307133974, 0.023535374543781153, -0.04067487350690499, 0.04078630509554096, -0.01654976154834899, 0.01109936368612624, 0.005338966273586878, 0.0, 0.0, 0.0, 0.0, 0.0, -0.05853594447196853, -0.004659722627839218, 0.009519829443970727, 0.01926050292207694, 0.0344153347337601, -0.014876504144483242, 0.0384537002308245, -0.05513404543099868, 0.022306053314249282, 0.009250796030408159, 0.0, 0.0, 0.0, 0.0, 0.0, -0.00844882449524667, -0.052461490471559284, 0.008705297675599095, 0.01693199997195406, 0.03527301731925284, -0.0069291330568276716, 0.02316126823553348, -0.04494847864487816, 0.03788739665629467, -0.009171053190122257, 0.0, 0.0, 0.0, 0.0, 0.0, 0.007606187217801689, -0.006480081086673078, -0.03775584989636142, 0.01374137841617039, 0.02288836534906244, -0.0007861366310379549, 0.011439173367704976, 0.00014793572746822143, 0.040976634239095575, -0.05177760670323072, 0.0, 0.0, 0.0, 0.0, 0.0, 0.016447868590012866, 0.015527957542589954, -0.01668674605787429, -0.023024432551600093, 0.007735352476871546, -0.002516037688074633, 0.008862716462871166, 0.017311115891733807, 0.03608613550108681, -0.059743930167617185, 0.0, 0.0, 0.0, 0.0, 0.0, 0.00920219343025888, 0.0178149115850556, 0.0085893412216908, -0.03841021462845819, 0.0028037683914529502, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
static const double ctcA_sum[1] = {15.357513860043456};
static const double ctcA_sum_g[90] = {0.010066321340220128, -0.7103012373705946, 0.1694880098193923, 0.24832241168560773, 0.2824244945253739, -0.24404924104142997, 0.24471783057324575, -0.09929856929009395, 0.06659618211675745, 0.03203379764152127, 0.0, 0.0, 0.0, 0.0, 0.0, -0.7024313336636224, -0.055916671534070615, 0.11423795332764873, 0.23112603506492332, 0.41298401680512126, -0.08925902486689946, 0.23072220138494698, -0.3308042725859921, 0.1338363198854957, 0.05550477618244896, 0.0, 0.0, 0.0, 0.0, 0.0, -0.10138589394296005, -0.6295378856587114, 0.10446357210718915, 0.20318399966344872, 0.42327620783103415, -0.041574798340966036, 0.13896760941320088, -0.269690871869269, 0.22732437993776802, -0.05502631914073355, 0.0, 0.0, 0.0, 0.0, 0.0, 0.09127424661362028, -0.07776097304007694, -0.45307019875633703, 0.1648965409940447, 0.2746603841887493, -0.004716819786227729, 0.06863504020622986, 0.0008876143648093286, 0.24585980543457345, -0.31066564021938436, 0.0, 0.0, 0.0, 0.0, 0.0, 0.1973744230801544, 0.18633549051107945, -0.2002409526944915, -0.27629319061920116, 0.09282422972245856, -0.015096226128447798, 0.053176298777227, 0.10386669535040284, 0.2165168130065209, -0.35846358100570314, 0.0, 0.0, 0.0, 0.0, 0.0, 0.11042632116310656, 0.21377893902066722, 0.1030720946602896, -0.4609225755414984, 0.033645220697435405, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
static const double ctcA_inf_none[3] = {12.023546395747651, 3.3339674642958053, INFINITY};
static const double ctcA_inf_mean[1] = {INFINITY};
static const double ctcB_none[3] = {8.62513826839602, 5.601161238933712, 3.1836713442248583};
static const double ctcB_none_g[90] = {-0.42406118970756296, 0.09456321159093682, -0.20124892809435643, 0.24832241168560773, 0.2824244945253739, 0.39192993516458274, 0.2644432162915469, -0.6527030984669326, 0.07196414151939724, -0.07563419450859411, 0.0441686009353303, -0.04756605031138904, -0.04554054446996276, 0.021129140137021517, 0.02780885370899986, -0.297878746315486, 0.05485784552270995, -0.4010891510772693, 0.23112603506492332, 0.41298401680512126, 0.22030030575461781, 0.2493194748465203, -0.4335617433091771, 0.12968401759501896, -0.1657420548869804, 0.0703531241177682, -0.0791307028809501, -0.010499543486710426, 0.010849936483192692, 0.008427185766699567, -0.2510752458912078, 0.06294403112096257, -0.4383289927242382, 0.20318399966344872, 0.42327620783103415, 0.08430243651786988, 0.15016903961387087, -0.13301391198322887, 0.17062770870864408, -0.27208527285715634, 0.06993967023018671, -0.05454121079453321, -0.02922950198329588, 0.009087861335953542, 0.004743181211688846, -0.321212249848374, 0.09281019927136161, -0.2111548746057829, 0.1648965409940447, 0.2746603841887493, 0.0355902036065678, 0.07416734097355694, 0.005400461835601792, 0.045216391771062424, -0.1603743981867892, 0.0, 0.0, 0.0, 0.0, 0.0, -0.17155745604240794, -0.03854170906466382, 0.02668069420466748, 0.09059424117994408, 0.09282422972245856, 0.03437451482971352, 0.057462553693737775, -0.013752335784797745, -0.23781417252438503, 0.15972943978573148, 0.0, 0.0, 0.0, 0.0, 0.0, 0.4369225042676016, -0.5496801595623049, 0.025060208435364266, 0.054052226161902764, 0.033645220697435405, 0.08862513287231921, 0.09126280871174557, -0.09422139567818846, -0.48744536697065977, 0.40177882106478296, 0.0, 0.0, 0.0, 0.0, 0.0};
static const double ctcB_mean[1] = {2.9530993510523516};
static const double ctcB_mean_g[90] = {-0.04711790996750699, 0.01050702351010409, -0.022360992010484047, 0.027591379076178632, 0.03138049939170821, 0.06044917368602298, 0.04078630509554096, -0.10066942946846998, 0.01109936368612624, -0.011665412999220194, 0.08778957389437463, -0.0945423490952148, -0.09051645081060006, 0.04199630891862606, 0.05527291709281396, -0.03309763847949844, 0.0060953161691899935, -0.04456546123080769, 0.025680670562769254, 0.0458871129783468, 0.03397793904171336, 0.0384537002308245, -0.06687024075848064, 0.020001768174739233, -0.025563166688796497, 0.13983396932766654, -0.15728029733276452, -0.020868907533053867, 0.021565349150070218, 0.01674988638808152, -0.02789724954346753, 0.006993781235662508, -0.04870322141380424, 0.02257599996260541, 0.04703068975900379, 0.013002356212172668, 0.02316126823553348, -0.02051535324739893, 0.026316703762486748, -0.04196497496279401, 0.1390121877940179, -0.10840618796927555, -0.0580965996187068, 0.01806304608703036, 0.009427553706934128, -0.035690249983152664, 0.010312244363484623, -0.023461652733975873, 0.018321837888227187, 0.03051782046541658, 0.0054892423525416695, 0.011439173367704976, 0.0008329383040056482, 0.006973934048891733, -0.024735288073144065, 0.0, 0.0, 0.0, 0.0, 0.0, -0.019061939560267544, -0.00428241211829598, 0.0029645215782963864, 0.010066026797771563, 0.010313803302495393, 0.005301741027874154, 0.008862716462871166, -0.0021210866021107925, -0.036679184032951256, 0.02463581314431673, 0.0, 0.0, 0.0, 0.0, 0.0, 0.048546944918622395, -0.061075573284700535, 0.0027844676039293624, 0.006005802906878084, 0.0037383578552706003, 0.01366906574180407, 0.014075886733617197, -0.014532203338585402, -0.07518096222500364, 0.0619682130881677, 0.0, 0.0, 0.0, 0.0, 0.0};
static const double ctcB_sum[1] = {17.40997085155459};
static const double ctcB_sum_g[90] = {-0.42406118970756296, 0.09456321159093682, -0.20124892809435643, 0.24832241168560773, 0.2824244945253739, 0.3626950421161379, 0.24471783057324575, -0.6040165768108199, 0.06659618211675745, -0.06999247799532117, 0.2633687216831239, -0.2836270472856445, -0.27154935243180023, 0.1259889267558782, 0.1658187512784419, -0.297878746315486, 0.05485784552270995, -0.4010891510772693, 0.23112603506492332, 0.41298401680512126, 0.20386763425028018, 0.23072220138494698, -0.4012214445508839, 0.1200106090484354, -0.153379000132779, 0.4195019079829997, -0.4718408919982936, -0.0626067225991616, 0.06469604745021065, 0.050249659164244564, -0.2510752458912078, 0.06294403112096257, -0.4383289927242382, 0.20318399966344872, 0.42327620783103415, 0.07801413727303601, 0.13896760941320088, -0.1230921194843936, 0.1579002225749205, -0.2517898497767641, 0.4170365633820537, -0.32521856390782666, -0.1742897988561204, 0.05418913826109109, 0.028282661120802383, -0.321212249848374, 0.09281019927136161, -0.2111548746057829, 0.1648965409940447, 0.2746603841887493, 0.03293545411525002, 0.06863504020622986, 0.00499762982403389, 0.0418436042933504, -0.1484117284388644, 0.0, 0.0, 0.0, 0.0, 0.0, -0.17155745604240794, -0.03854170906466382, 0.02668069420466748, 0.09059424117994408, 0.09282422972245856, 0.031810446167244925, 0.053176298777227, -0.012726519612664756, -0.22007510419770757, 0.14781487886590042, 0.0, 0.0, 0.0, 0.0, 0.0, 0.4369225042676016, -0.5496801595623049, 0.025060208435364266, 0.054052226161902764, 0.033645220697435405, 0.08201439445082444, 0.0844553204017032, -0.08719322003151242, -0.4510857733500219, 0.37180927852900625, 0.0, 0.0, 0.0, 0.0, 0.0};
static const double ctcC_none[1] = {7.881356004914031};
static const double ctcC_none_g[30] = {-0.0034455424754204953, -0.6967893735549536, 0.1694880098193923, 0.24832241168560773, 0.2824244945253739, -0.02063058018572076, -0.09179894854835312, 0.11423795332764873, -0.4147924413986962, 0.41298401680512126, -0.24262694814822297, 0.05157444511150832, 0.10446357210718915, -0.33668727690150796, 0.42327620783103415, -0.31812061555909543, 0.12175787439553847, 0.12413125915821234, -0.20242890218340442, 0.2746603841887493, -0.10649510113699463, 0.18633549051107945, 0.11554331338073645, -0.28820793247728055, 0.09282422972245856, -0.06771670635111292, 0.21377893902066722, 0.1030720946602896, -0.2827795480272793, 0.033645220697435405};
static const double ctcC_mean[1] = {2.627118668304677};
static const double ctcC_mean_g[30] = {-0.0011485141584734984, -0.23226312451831785, 0.056496003273130764, 0.0827741372285359, 0.09414149817512461, -0.00687686006190692, -0.030599649516117704, 0.03807931777588291, -0.13826414713289872, 0.1376613389350404, -0.08087564938274099, 0.017191481703836105, 0.03482119070239638, -0.11222909230050264, 0.14109206927701137, -0.10604020518636514, 0.04058595813184615, 0.04137708638607077, -0.06747630072780147, 0.09155346139624976, -0.03549836704566488, 0.062111830170359816, 0.03851443779357882, -0.09606931082576017, 0.030941409907486183, -0.022572235450370973, 0.0712596463402224, 0.0343573648867632, -0.09425984934242641, 0.011215073565811801};
static const double ctcD_mean[1] = {4.781918409248369};
static const double ctcD_mean_g[90] = {-0.018496738474901454, -0.0982090808634944, 0.028248001636565382, 0.04138706861426795, 0.04707074908756231, -0.15959198089725304, 0.08157261019108192, 0.04514271078674472, 0.02219872737225248, 0.010677932547173755, 0.01723003207815827, 0.026911545579625357, 0.020804218602116713, 0.02099815445931303, -0.08594395071921343, -0.015099354833428601, -0.05672230424755499, -0.035530016230690575, 0.03852100584415388, 0.0688306694675202, -0.21253445018587253, 0.076907400461649, 0.06639951022399117, 0.044612106628498564, 0.024615432871733345, -0.03945318181521749, 0.033649138130131935, 0.017521423571608352, 0.010782674575035109, -0.022500054461557884, -0.018933264107144635, -0.014685206435058743, -0.07079156404021059, 0.03386399994390812, 0.07054603463850569, -0.2544856158449537, 0.04632253647106696, 0.06728705053127407, 0.07577479331258934, 0.06510123553002312, -0.054587748485409836, 0.03823852151092387, 0.018755248829734367, 0.00903152304351518, -0.011437544898763549, -0.03830984621238414, 0.013221700082750254, -0.04817134140083186, 0.02748275683234078, 0.04577673069812488, -0.26951184356421537, 0.022878346735409952, 0.04615106689065421, 0.08195326847819115, 0.11852916145996016, -0.05993254646000153, 0.04148732760718544, 0.02764109125681918, 0.015162433515469994, -0.024358305919473112, -0.04810633722734206, 0.029762179808844703, -0.01222558773190308, 0.015099040196657344, 0.015470704953743092, 0.0, 0.0, 0.0, 0.0, 0.0, 0.00016185163794620286, 0.03196465063903801, 0.0356418692642502, 0.03032282654395692, -0.09809119808519123, -0.053192804850778146, 0.0356298231701112, 0.002946740537443881, 0.009008704360317126, 0.0056075367829059005, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};

/* log_softmax of 2 sin(0.37 i + 0.1), [T 6, N 3, C 5] */
static tensor *ctc_lp(void) {
    tensor *i = tensor_arange(0, 90, 1, TENSOR_F64);
    return tensor_log_softmax(tensor_reshape(tensor_mul_scalar(tensor_sin(tensor_add_scalar(tensor_mul_scalar(i, 0.37), 0.1)), 2), TENSOR_SHAPE(6, 3, 5)), 2);
}
typedef struct { tensor *tg, *il, *tl; int64_t blank; tensor_reduction r; bool zi, softmax; } ctc_ctx;
static tensor *ctc_call(tensor *const *in, const void *vctx) {
    const ctc_ctx *c = (const ctc_ctx *)vctx;
    return tensor_ctc_loss(c->softmax ? tensor_log_softmax(in[0], -1) : in[0], test_like(in[0], c->tg), test_like(in[0], c->il), test_like(in[0], c->tl), c->blank, c->r, c->zi);
}
static tensor *i64v(int nd, const int64_t *shape, const double *v) { return test_tensor(TENSOR_I64, nd, shape, v); }
static const double CTC_TGA[12] = {1, 1, 2, 3, 2, 4, 0, 0, 3, 3, 3, 0}, CTC_ILA[3] = {6, 5, 4}, CTC_TLA[3] = {4, 2, 3};
static const double CTC_TGB[6] = {0, 0, 1, 4, 3, 1}, CTC_ILB[3] = {6, 6, 3}, CTC_TLB[3] = {3, 2, 1};

/* value v, and the gradient of log_probs for the output gradient sin(1 .. n) against g */
static void check_ctc(int line, const ctc_ctx *c, tensor *lp, const double *v, const double *g) {
    tensor *l = ctc_call(&lp, c);
    if (!l) { test_fail(__FILE__, line, "NULL: %s", tensor_last_error() ? tensor_last_error() : "no error"); return; }
    test_check_values(__FILE__, line, l, v, tensor_numel(l), 1e-12, 1e-12);
    if (!g) return;
    tensor_zero_grad(lp);
    if (tensor_backward_with(l, upstream(l)) != 0) { test_fail(__FILE__, line, "backward: %s", tensor_last_error()); return; }
    test_check_values(__FILE__, line, tensor_grad(lp), g, tensor_numel(lp), 1e-12, 1e-11);
    tensor_zero_grad(lp);
}

TEST(loss_more_ctc_padded_repeats_zero_infinity) {
    tensor *lp = tensor_set_requires_grad(tensor_detach(ctc_lp()), true);
    /* b0 repeats a label (needs a blank between: 5 frames of 6), b2 cannot fit 3 3 3 into 4 frames */
    ctc_ctx c = {i64v(TENSOR_SHAPE(3, 4), CTC_TGA), i64v(TENSOR_SHAPE(3), CTC_ILA), i64v(TENSOR_SHAPE(3), CTC_TLA), 0, TENSOR_REDUCTION_NONE, true, false};
    static const vg a[3] = {{ctcA_none, ctcA_none_g}, {ctcA_mean, ctcA_mean_g}, {ctcA_sum, ctcA_sum_g}};
    for (int r = 0; r < 3; r++) {
        c.r = PY_REDS[r];
        check_ctc(__LINE__, &c, lp, a[r].v, a[r].g);
    }
    c.r = TENSOR_REDUCTION_NONE;
    CHECK_SHAPE(ctc_call(&lp, &c), TENSOR_SHAPE(3));
    /* without zero_infinity the impossible alignment costs inf */
    c.zi = false;
    c.r = TENSOR_REDUCTION_NONE;
    check_ctc(__LINE__, &c, lp, ctcA_inf_none, NULL);
    c.r = TENSOR_REDUCTION_MEAN;
    check_ctc(__LINE__, &c, lp, ctcA_inf_mean, NULL);
    /* i32 targets and lengths; a non-contiguous log_probs */
    ctc_ctx c32 = {test_tensor(TENSOR_I32, TENSOR_SHAPE(3, 4), CTC_TGA), test_tensor(TENSOR_I32, TENSOR_SHAPE(3), CTC_ILA), test_tensor(TENSOR_I32, TENSOR_SHAPE(3), CTC_TLA), 0,
                   TENSOR_REDUCTION_SUM, true, false};
    check_ctc(__LINE__, &c32, lp, ctcA_sum, ctcA_sum_g);
    tensor *lpt = tensor_transpose(tensor_contiguous(tensor_transpose(ctc_lp(), 0, 2)), 0, 2);
    CHECK_VALUES(ctc_call(&lpt, &c32), ctcA_sum, 1, 1e-12, 1e-12);
    /* its backward is not differentiable again (PyTorch's neither) */
    tensor *l = ctc_call(&lp, &c32), *gl = NULL;
    tensor_clear_error();
    CHECK(tensor_autograd_grad(1, &l, NULL, 1, &lp, &gl, true) != 0 && tensor_last_error());
    tensor_clear_error();
}

TEST(loss_more_ctc_concatenated_blank_unbatched) {
    tensor *lp = tensor_set_requires_grad(tensor_detach(ctc_lp()), true);
    ctc_ctx c = {i64v(TENSOR_SHAPE(6), CTC_TGB), i64v(TENSOR_SHAPE(3), CTC_ILB), i64v(TENSOR_SHAPE(3), CTC_TLB), 2, TENSOR_REDUCTION_NONE, false, false};
    static const vg b[3] = {{ctcB_none, ctcB_none_g}, {ctcB_mean, ctcB_mean_g}, {ctcB_sum, ctcB_sum_g}};
    for (int r = 0; r < 3; r++) {
        c.r = PY_REDS[r];
        check_ctc(__LINE__, &c, lp, b[r].v, b[r].g);
    }
    /* unbatched: [T, C] with targets [S] and 0-dim lengths */
    tensor *lp1 = tensor_set_requires_grad(tensor_contiguous(tensor_select(tensor_detach(ctc_lp()), 1, 0)), true);
    static const double t1[3] = {1, 3, 3};
    ctc_ctx cu = {i64v(TENSOR_SHAPE(3), t1), tensor_scalar(6, TENSOR_I64), tensor_scalar(3, TENSOR_I64), 0, TENSOR_REDUCTION_NONE, false, false};
    check_ctc(__LINE__, &cu, lp1, ctcC_none, ctcC_none_g);
    CHECK_SHAPE(ctc_call(&lp1, &cu), 0, NULL);
    cu.r = TENSOR_REDUCTION_MEAN;
    check_ctc(__LINE__, &cu, lp1, ctcC_mean, ctcC_mean_g);
    /* an empty target (its loss: every frame blank; mean divides it by 1) */
    static const double td[6] = {1, 2, 0, 0, 4, 4}, ild[3] = {6, 4, 5}, tld[3] = {2, 0, 2};
    ctc_ctx cd = {i64v(TENSOR_SHAPE(3, 2), td), i64v(TENSOR_SHAPE(3), ild), i64v(TENSOR_SHAPE(3), tld), 0, TENSOR_REDUCTION_MEAN, false, false};
    check_ctc(__LINE__, &cd, lp, ctcD_mean, ctcD_mean_g);
    /* f32 */
    tensor *l32 = tensor_ctc_loss(tensor_to_dtype(ctc_lp(), TENSOR_F32), c.tg, c.il, c.tl, 2, TENSOR_REDUCTION_SUM, false);
    CHECK(l32 && tensor_get_dtype(l32) == TENSOR_F32);
    CHECK_VALUES(l32, ctcB_sum, 1, 1e-5, 1e-5);
}

void gradcheck_ctc_loss(void) {
    /* through log_softmax: PyTorch's gradient is that of the logits */
    tensor *in[1] = {test_leaf(TENSOR_SHAPE(6, 3, 5), -2, 2)};
    ctc_ctx ca = {i64v(TENSOR_SHAPE(3, 4), CTC_TGA), i64v(TENSOR_SHAPE(3), CTC_ILA), i64v(TENSOR_SHAPE(3), CTC_TLA), 0, TENSOR_REDUCTION_NONE, true, true};
    ctc_ctx cb = {i64v(TENSOR_SHAPE(6), CTC_TGB), i64v(TENSOR_SHAPE(3), CTC_ILB), i64v(TENSOR_SHAPE(3), CTC_TLB), 2, TENSOR_REDUCTION_NONE, false, true};
    for (int r = 0; r < 3; r++) {
        ca.r = cb.r = PY_REDS[r];
        CHECK(GRADCHECK(ctc_call, &ca, 1, in) == 90);
        CHECK(GRADCHECK(ctc_call, &cb, 1, in) == 90);
    }
}
void bad_input_ctc_loss(void) {
    const char *fn = "tensor_ctc_loss";
    tensor *lp = tensor_zeros(TENSOR_SHAPE(6, 3, 5), TENSOR_F32), *tg = i64v(TENSOR_SHAPE(3, 4), CTC_TGA), *il = i64v(TENSOR_SHAPE(3), CTC_ILA), *tl = i64v(TENSOR_SHAPE(3), CTC_TLA);
    CHECK_BAD(tensor_ctc_loss(NULL, tg, il, tl, 0, TENSOR_REDUCTION_MEAN, false), fn);
    CHECK_BAD(tensor_ctc_loss(lp, tg, NULL, tl, 0, TENSOR_REDUCTION_MEAN, false), fn);
    CHECK_BAD(tensor_ctc_loss(lp, tg, il, tl, 0, BAD_RED, false), fn);
    CHECK_BAD(tensor_ctc_loss(tensor_zeros(TENSOR_SHAPE(6, 3, 5), TENSOR_I64), tg, il, tl, 0, TENSOR_REDUCTION_MEAN, false), fn);
    CHECK_BAD(tensor_ctc_loss(tensor_zeros(TENSOR_SHAPE(6), TENSOR_F32), tg, il, tl, 0, TENSOR_REDUCTION_MEAN, false), fn);
    CHECK_BAD(tensor_ctc_loss(lp, tensor_zeros(TENSOR_SHAPE(3, 4), TENSOR_F32), il, tl, 0, TENSOR_REDUCTION_MEAN, false), fn); /* integer targets */
    CHECK_BAD(tensor_ctc_loss(lp, tensor_zeros(TENSOR_SHAPE(2, 4), TENSOR_I64), il, tl, 0, TENSOR_REDUCTION_MEAN, false), fn); /* 2 rows for 3 */
    CHECK_BAD(tensor_ctc_loss(lp, tg, il, tl, 5, TENSOR_REDUCTION_MEAN, false), fn); /* blank out of range */
    CHECK_BAD(tensor_ctc_loss(lp, tg, il, tl, -1, TENSOR_REDUCTION_MEAN, false), fn);
    CHECK_BAD(tensor_ctc_loss(lp, tg, tensor_full(TENSOR_SHAPE(3), 7, TENSOR_I64), tl, 0, TENSOR_REDUCTION_MEAN, false), fn); /* 7 frames of 6 */
    CHECK_BAD(tensor_ctc_loss(lp, tg, il, tensor_full(TENSOR_SHAPE(3), 5, TENSOR_I64), 0, TENSOR_REDUCTION_MEAN, false), fn); /* longer than S */
    CHECK_BAD(tensor_ctc_loss(lp, tg, il, tensor_full(TENSOR_SHAPE(3), -1, TENSOR_I64), 0, TENSOR_REDUCTION_MEAN, false), fn);
    CHECK_BAD(tensor_ctc_loss(lp, tg, tensor_full(TENSOR_SHAPE(2), 6, TENSOR_I64), tl, 0, TENSOR_REDUCTION_MEAN, false), fn); /* 2 lengths for 3 */
    CHECK_BAD(tensor_ctc_loss(lp, tg, tensor_full(TENSOR_SHAPE(3), 6, TENSOR_F32), tl, 0, TENSOR_REDUCTION_MEAN, false), fn);
    CHECK_BAD(tensor_ctc_loss(lp, i64v(TENSOR_SHAPE(6), CTC_TGB), il, tensor_full(TENSOR_SHAPE(3), 3, TENSOR_I64), 0, TENSOR_REDUCTION_MEAN, false), fn); /* 9 of 6 */
    CHECK_BAD(tensor_ctc_loss(lp, tensor_full(TENSOR_SHAPE(3, 4), 5, TENSOR_I64), il, tl, 0, TENSOR_REDUCTION_MEAN, false), fn); /* label 5 of 5 classes */
    CHECK_BAD(tensor_ctc_loss(tensor_zeros(TENSOR_SHAPE(6, 5), TENSOR_F32), tg, tensor_scalar(6, TENSOR_I64), tensor_scalar(3, TENSOR_I64), 0, TENSOR_REDUCTION_MEAN, false), fn);
}

/* Concatenated targets whose target_lengths add up past INT64_MAX: refused before the sum (it
   overflowed, undefined behaviour), the message naming the length at fault. */
TEST(loss_ctc_target_lengths_sum_overflow) {
    tensor_scope_begin();
    tensor *lp = tensor_zeros(TENSOR_SHAPE(6, 2, 5), TENSOR_F32), *il = tensor_full(TENSOR_SHAPE(2), 6, TENSOR_I64);
    int64_t big[2] = {1, INT64_MAX};
    tensor *tl = tensor_from_data(big, 1, (const int64_t[]){2}, TENSOR_I64);
    CHECK_BAD(tensor_ctc_loss(lp, tensor_ones(TENSOR_SHAPE(6), TENSOR_I64), il, tl, 0, TENSOR_REDUCTION_MEAN, false), "9223372036854775807");
    tensor_scope_end();
}
